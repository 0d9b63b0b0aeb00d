# SPDX-License-Identifier: Apache-2.0
# `cpack -G DEB` (scripts/package.sh): myrewrite_<version>_amd64.deb from the
# same install() rules as `cmake --install`, with prefix /usr, so the package
# carries exactly what a source install does. The Debian-only parts (the
# conffiles list, the maintainer scripts, the copyright and changelog) are in
# dist/deb/; dist/install.cmake gzips the man page and changelog when
# MR_DEB_LAYOUT is on (set by scripts/package.sh), as Debian policy wants.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME myrewrite)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
# DESTDIR staging, so dist/install.cmake sees prefix /usr and puts the config in /etc.
set(CPACK_SET_DESTDIR ON)
# Maintainer: scripts/package.sh passes DEBFULLNAME <DEBEMAIL> when set (the
# Debian convention); its default has no real mail host, which lintian reports.
set(CPACK_PACKAGE_CONTACT "${MYREWRITE_DEB_MAINTAINER}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "MySQL/MariaDB wire-protocol proxy that rewrites statements")
set(CPACK_PACKAGE_DESCRIPTION
    "myrewrite sits between clients and a MySQL or MariaDB server and relays the\n\
protocol unchanged, except for the statements its rules rewrite: UPDATE and\n\
DELETE DELAYED staged and flushed in the background, deep LIMIT pages\n\
turned into deferred joins or keyset reads, queue claims released when a\n\
client goes away, and rewrite and block rules written by a DBA.")
# Apache-2.0 (LICENSE); a .deb has no licence field: dist/deb/copyright says it.
set(CPACK_RESOURCE_FILE_LICENSE "${CMAKE_CURRENT_SOURCE_DIR}/LICENSE")
# Runtime libraries from dpkg-shlibdeps; passwd for useradd in postinst.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "passwd")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${CMAKE_CURRENT_SOURCE_DIR}/dist/deb/conffiles;${CMAKE_CURRENT_SOURCE_DIR}/dist/deb/postinst;${CMAKE_CURRENT_SOURCE_DIR}/dist/deb/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
