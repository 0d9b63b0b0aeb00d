# SPDX-License-Identifier: Apache-2.0
# Install-time part of `cmake --install` (see CMakeLists.txt): the paths in
# the systemd unit and where the config goes depend on the prefix given at
# install time, so they are worked out here rather than at configure time.
#
# Prefix /usr (distribution packages): config in /etc/myrewrite. Any other
# prefix P: config in P/etc/myrewrite. An existing myrewrite.conf is never
# overwritten; the example is always installed to share/doc/myrewrite.
# Input: MR_DIST (the source dist/ directory).

set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix STREQUAL "/usr")
  set(confdir "/etc/myrewrite")
else()
  set(confdir "${prefix}/etc/myrewrite")
endif()
set(dest "$ENV{DESTDIR}")

# The unit, with its paths filled in.
file(READ "${MR_DIST}/myrewrite.service" unit)
string(REPLACE "@MYREWRITE_BINDIR@" "${prefix}/bin" unit "${unit}")
string(REPLACE "@MYREWRITE_CONFDIR@" "${confdir}" unit "${unit}")
set(unitdir "${dest}${prefix}/lib/systemd/system")
file(MAKE_DIRECTORY "${unitdir}")
message(STATUS "Installing: ${unitdir}/myrewrite.service")
file(WRITE "${unitdir}/myrewrite.service" "${unit}")

# The config (only when there is none yet) and an empty rules directory.
file(MAKE_DIRECTORY "${dest}${confdir}/rules")
if(EXISTS "${dest}${confdir}/myrewrite.conf")
  message(STATUS "Keeping: ${dest}${confdir}/myrewrite.conf (example in share/doc/myrewrite)")
else()
  message(STATUS "Installing: ${dest}${confdir}/myrewrite.conf")
  file(COPY "${MR_DIST}/myrewrite.conf" DESTINATION "${dest}${confdir}"
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endif()

# The Debian package's layout (scripts/package.sh configures with
# MYREWRITE_DEB=ON): the example rules become /etc/myrewrite/rules/ conffiles,
# the man page and changelog are gzipped, and the copyright file is added.
if(MR_DEB_LAYOUT)
  file(COPY "${MR_DIST}/../rules/00-examples.rules" DESTINATION "${dest}${confdir}/rules"
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  set(docdir "${dest}${prefix}/share/doc/myrewrite")
  file(COPY "${MR_DIST}/deb/copyright" DESTINATION "${docdir}")
  execute_process(COMMAND gzip -9nf "${dest}${prefix}/share/man/man1/myrewrite.1")
  # A native package: changelog.gz, not changelog.Debian.gz.
  configure_file("${MR_DIST}/deb/changelog.in" "${docdir}/changelog" @ONLY)
  execute_process(COMMAND gzip -9nf "${docdir}/changelog")
endif()
