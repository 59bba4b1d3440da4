# What `cmake --install` puts where, the find_package(svm) and pkg-config
# files, and the Debian package (cpack -G DEB). Layout under the prefix:
#   bin/        svmrun, svmd, svm-plot
#   lib/svm/    libsvm.so (preloaded by svmrun; see SVM_INSTALL_PRELOADDIR)
#   include/svm/svm.h
#   lib/cmake/svm/, lib/pkgconfig/svm.pc
#   share/doc/svm/, share/man/man1/svmrun.1, svmd.1
include(CMakePackageConfigHelpers)

install(TARGETS svm EXPORT svmTargets
        LIBRARY DESTINATION ${SVM_INSTALL_PRELOADDIR})
install(TARGETS svmrun svmd EXPORT svmTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES libsvm/svm.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/svm)
install(PROGRAMS scripts/svm-plot DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES README.md CHANGELOG.md LICENSE doc/onesided.md doc/runtime.md doc/stats.md doc/wire.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES svmd/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME svmd.md)

# Man pages from the programs' own --help (doc/man/gen-man.py; the sections
# CLI11 does not know come from doc/man/*.h2m).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  set(svm_man_pages)
  foreach(prog svmrun svmd)
    set(page ${PROJECT_BINARY_DIR}/man/${prog}.1)
    add_custom_command(
      OUTPUT ${page}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
      COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
              $<TARGET_FILE:Python3::Interpreter> ${PROJECT_SOURCE_DIR}/doc/man/gen-man.py $<TARGET_FILE:${prog}>
              ${PROJECT_SOURCE_DIR}/doc/man/${prog}.h2m ${page}
      DEPENDS ${prog} ${PROJECT_SOURCE_DIR}/doc/man/gen-man.py ${PROJECT_SOURCE_DIR}/doc/man/${prog}.h2m
      COMMENT "man page ${prog}.1"
      VERBATIM)
    list(APPEND svm_man_pages ${page})
  endforeach()
  add_custom_target(svm_man ALL DEPENDS ${svm_man_pages})
  install(FILES ${svm_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "man pages: not generated (no Python 3)")
endif()

install(EXPORT svmTargets NAMESPACE svm:: DESTINATION ${SVM_INSTALL_CMAKEDIR})
configure_package_config_file(cmake/svmConfig.cmake.in ${PROJECT_BINARY_DIR}/svmConfig.cmake
                              INSTALL_DESTINATION ${SVM_INSTALL_CMAKEDIR})
# 0.x: a minor release may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/svmConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/svmConfig.cmake ${PROJECT_BINARY_DIR}/svmConfigVersion.cmake
        DESTINATION ${SVM_INSTALL_CMAKEDIR})

# svm.pc finds the prefix from its own place (${pcfiledir}): relocatable.
file(RELATIVE_PATH SVM_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" SVM_PC_TO_PREFIX "${SVM_PC_TO_PREFIX}")
configure_file(cmake/svm.pc.in ${PROJECT_BINARY_DIR}/svm.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/svm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# cpack -G DEB: dependencies come from dpkg-shlibdeps, so they are the Debian
# packages that ship the libraries svm links.
set(CPACK_PACKAGE_NAME svm)
set(CPACK_PACKAGE_VENDOR "svm")
set(CPACK_PACKAGE_CONTACT "svm maintainers <svm@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "page-based shared virtual memory: run pthreads programs across nodes")
set(CPACK_PACKAGE_DESCRIPTION
    "svm runs an ordinary pthreads program across several machines as if they were one SMP: \
svmrun launches the job, libsvm.so (preloaded) keeps the shared memory coherent, svmd serves \
remote hosts.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
# svm-plot's; a recommendation, since jobs run without it.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, python3-matplotlib")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.invalid/svm")
include(CPack)
