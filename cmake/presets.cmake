# Read a preset's RTL parameters from configs/presets.json (the one source of truth).
set(TP_PRESETS_FILE "${PROJECT_SOURCE_DIR}/configs/presets.json")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${TP_PRESETS_FILE}")
file(READ "${TP_PRESETS_FILE}" TP_PRESETS_JSON)

# A preset may name a base ("base": "<name>"): an entry of the top-level "bases" object (not a
# preset itself) or another preset, which may have a base of its own. A key the preset does not
# set comes from its base, and so on up the chain, leaf by leaf, like the C++ loader's merge
# (sw/config): "hbm timing trefi" is the preset's if it sets hbm.timing.trefi, else its base's.

# The JSON path of entry <name> ("bases;<name>" or "presets;<name>") in <out>, or "" when neither
# has it.
function(_tp_preset_entry out name)
  foreach(group bases presets)
    string(JSON _type ERROR_VARIABLE _err TYPE "${TP_PRESETS_JSON}" ${group} ${name})
    if(NOT _err)
      set(${out} "${group};${name}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

# The names of a JSON object's members, comma separated ("none" when it is empty or absent).
function(_tp_preset_names out group)
  set(_list "")
  string(JSON _count ERROR_VARIABLE _err LENGTH "${TP_PRESETS_JSON}" ${group})
  if(NOT _err AND _count GREATER 0)
    math(EXPR _last "${_count} - 1")
    foreach(_i RANGE ${_last})
      string(JSON _name MEMBER "${TP_PRESETS_JSON}" ${group} ${_i})
      list(APPEND _list ${_name})
    endforeach()
  endif()
  if(NOT _list)
    set(_list none)
  endif()
  string(REPLACE ";" ", " _list "${_list}")
  set(${out} "${_list}" PARENT_SCOPE)
endfunction()

# The base chain of preset <preset>: its name, then its base's, and so on, in <out>. A fatal
# error for a cycle or an unknown base.
function(_tp_preset_chain out preset)
  set(_chain ${preset})
  set(_path presets ${preset})
  while(TRUE)
    string(JSON _base ERROR_VARIABLE _err GET "${TP_PRESETS_JSON}" ${_path} base)
    if(_err)
      break()
    endif()
    list(JOIN _path "." _where)
    string(JSON _type TYPE "${TP_PRESETS_JSON}" ${_path} base)
    if(NOT _type STREQUAL "STRING" OR _base STREQUAL "")
      message(FATAL_ERROR "${TP_PRESETS_FILE}: ${_where}.base: expected the name of a base, got '${_base}'")
    endif()
    list(JOIN _chain " -> " _text)
    set(_text "${_text} -> ${_base}")
    if(_base IN_LIST _chain)
      message(FATAL_ERROR "${TP_PRESETS_FILE}: presets.${preset}.base: the base chain ${_text} is a cycle")
    endif()
    _tp_preset_entry(_path ${_base})
    if(NOT _path)
      list(LENGTH _chain _len)
      set(_via "")
      if(_len GREATER 1)
        set(_via " (preset '${preset}' inherits ${_text})")
      endif()
      _tp_preset_names(_bases bases)
      _tp_preset_names(_presets presets)
      message(FATAL_ERROR "${TP_PRESETS_FILE}: ${_where}.base: unknown base '${_base}'${_via}: it is neither in "
                          "bases (${_bases}) nor in presets (${_presets})")
    endif()
    list(APPEND _chain ${_base})
  endwhile()
  set(${out} ${_chain} PARENT_SCOPE)
endfunction()

# tp_preset_find(<out-var> <preset> <key>...): a leaf value (a scalar or an array), from the preset
# or the first base up its chain that sets it, or <out-var>-NOTFOUND when none does.
function(tp_preset_find out preset)
  if(NOT preset IN_LIST TP_ALL_PRESETS)
    message(FATAL_ERROR "${TP_PRESETS_FILE}: unknown preset '${preset}' (known presets: ${TP_ALL_PRESETS})")
  endif()
  string(REPLACE ";" "." _key "${ARGN}")
  list(LENGTH ARGN _depth)
  foreach(_name ${TP_PRESET_CHAIN_${preset}})
    _tp_preset_entry(_path ${_name})
    # Walk down the keys in this entry: a key it lacks is its base's to give; an object merges
    # with the base's, anything else replaces the base's whole subtree (the C++ merge).
    set(_keys "")
    set(_level 0)
    foreach(_k ${ARGN})
      list(APPEND _keys ${_k})
      math(EXPR _level "${_level} + 1")
      string(JSON _type ERROR_VARIABLE _err TYPE "${TP_PRESETS_JSON}" ${_path} ${_keys})
      if(_err)
        break()  # not set here: next base
      endif()
      if(_level EQUAL _depth)
        string(JSON _value GET "${TP_PRESETS_JSON}" ${_path} ${_keys})
        set(${out} "${_value}" PARENT_SCOPE)
        return()
      endif()
      if(NOT _type STREQUAL "OBJECT")
        list(JOIN _path "." _where)
        string(REPLACE ";" "." _at "${_keys}")
        message(FATAL_ERROR "${TP_PRESETS_FILE}: presets.${preset}.${_key}: ${_where}.${_at} is not an object")
      endif()
    endforeach()
  endforeach()
  set(${out} ${out}-NOTFOUND PARENT_SCOPE)
endfunction()

# tp_preset_get(<out-var> <preset> <key>...): as tp_preset_find, or a fatal error that names the key.
function(tp_preset_get out preset)
  tp_preset_find(_value ${preset} ${ARGN})
  if(_value STREQUAL "_value-NOTFOUND")
    string(REPLACE ";" "." _key "${ARGN}")
    list(JOIN TP_PRESET_CHAIN_${preset} " -> " _text)
    message(FATAL_ERROR "${TP_PRESETS_FILE}: presets.${preset}.${_key}: missing (looked in ${_text})")
  endif()
  set(${out} "${_value}" PARENT_SCOPE)
endfunction()

string(JSON TP_DEFAULT_PRESET GET "${TP_PRESETS_JSON}" default)

# Every preset's name: the members of "presets" (not those of "bases"), in the order
# string(JSON MEMBER) lists them. Each preset's base chain is checked now, in
# TP_PRESET_CHAIN_<preset>.
set(TP_ALL_PRESETS "")
string(JSON _count LENGTH "${TP_PRESETS_JSON}" presets)
math(EXPR _last "${_count} - 1")
foreach(_i RANGE ${_last})
  string(JSON _name MEMBER "${TP_PRESETS_JSON}" presets ${_i})
  list(APPEND TP_ALL_PRESETS ${_name})
  string(JSON _type ERROR_VARIABLE _err TYPE "${TP_PRESETS_JSON}" bases ${_name})
  if(NOT _err)
    message(FATAL_ERROR "${TP_PRESETS_FILE}: bases.${_name}: '${_name}' is a preset too (a name is either a base or "
                        "a preset)")
  endif()
endforeach()
foreach(_name ${TP_ALL_PRESETS})
  _tp_preset_chain(TP_PRESET_CHAIN_${_name} ${_name})
endforeach()
