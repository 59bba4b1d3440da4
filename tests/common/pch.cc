// The object that carries the tests' shared precompiled header (tests/CMakeLists.txt).
