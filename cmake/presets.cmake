# Read a preset's RTL parameters from configs/presets.json (the one source of truth).
set(TP_PRESETS_FILE "${PROJECT_SOURCE_DIR}/configs/presets.json")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${TP_PRESETS_FILE}")
file(READ "${TP_PRESETS_FILE}" TP_PRESETS_JSON)

# tp_preset_get(<out-var> <preset> <key>...): a value, or a fatal error that names the key.
function(tp_preset_get out preset)
  if(NOT preset IN_LIST TP_ALL_PRESETS)
    message(FATAL_ERROR "${TP_PRESETS_FILE}: unknown preset '${preset}' (known presets: ${TP_ALL_PRESETS})")
  endif()
  string(JSON _value ERROR_VARIABLE _err GET "${TP_PRESETS_JSON}" presets ${preset} ${ARGN})
  if(_err)
    string(REPLACE ";" "." _key "${ARGN}")
    message(FATAL_ERROR "${TP_PRESETS_FILE}: presets.${preset}.${_key}: ${_err}")
  endif()
  set(${out} "${_value}" PARENT_SCOPE)
endfunction()

string(JSON TP_DEFAULT_PRESET GET "${TP_PRESETS_JSON}" default)

# Every preset's name, in file order.
set(TP_ALL_PRESETS "")
string(JSON _count LENGTH "${TP_PRESETS_JSON}" presets)
math(EXPR _last "${_count} - 1")
foreach(_i RANGE ${_last})
  string(JSON _name MEMBER "${TP_PRESETS_JSON}" presets ${_i})
  list(APPEND TP_ALL_PRESETS ${_name})
endforeach()
