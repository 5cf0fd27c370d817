# ISA, interpreter and compiler tests (plain C++); appended to TP_TEST_TARGETS
