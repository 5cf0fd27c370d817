# chip RTL tests
