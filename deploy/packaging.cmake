# Installation layout and the Debian packages, included from the
# top-level CMakeLists.txt.
#
#   cmake --build build                      # cpack builds nothing itself
#   cd build && cpack                        # -> fabricdiag-agent_*.deb,
#                                            #    fabricdiag-collector_*.deb
#
# Three packages, one per kind of host or user:
#   fabricdiag-agent      every GPU node: the agent and its unit.
#   fabricdiag-collector  the collector host: the collector, its unit, the
#                         analyzer thresholds, the `fabricdiag` ops CLI
#                         (operators run it where the collector is), and
#                         the gNMI bridge with its unit, installed but not
#                         enabled (it needs the switches' credentials first).
#   python3-fabricdiag    training images: the Python module that declares
#                         a job's layout (python/, docs/integrations.md);
#                         Architecture: all, no binaries, no service.
# The binaries' install(TARGETS) rules live next to the targets and name
# their CPack component there: agent, collector (collector and CLI), and
# sim, which no package ships (the simulator is a test tool). Everything
# else a package contains is installed here.
#
# Paths under /etc and /lib are absolute on purpose: a unit or a conffile
# at /usr/etc would be found by nobody. `cmake --install` into a staging
# tree therefore needs DESTDIR (cpack stages them by itself).

set(FABRICDIAG_DEPLOY_DIR ${PROJECT_SOURCE_DIR}/deploy)
# Debian 12 ships units in /lib/systemd/system (debhelper 13.11 still does;
# /lib is /usr/lib on merged-/usr systems, which bookworm always is).
set(FABRICDIAG_SYSTEMD_UNIT_DIR /lib/systemd/system)

# --- agent ---------------------------------------------------------------------
install(FILES ${FABRICDIAG_DEPLOY_DIR}/systemd/fabricdiag-agent.service
  DESTINATION ${FABRICDIAG_SYSTEMD_UNIT_DIR} COMPONENT agent)
install(FILES ${FABRICDIAG_DEPLOY_DIR}/etc/default/fabricdiag-agent
  DESTINATION /etc/default COMPONENT agent)
# Each package has its own doc directory: two packages shipping the same
# /usr/share/doc/fabricdiag/README.md would conflict in dpkg.
install(FILES ${PROJECT_SOURCE_DIR}/README.md
  DESTINATION share/doc/fabricdiag-agent COMPONENT agent)
# The user documentation (docs/*.md, linked from the README) with it, so a
# node without network access has the runbook and the formats.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
  DESTINATION share/doc/fabricdiag-agent/docs COMPONENT agent
  FILES_MATCHING PATTERN "*.md")

# --- collector and CLI -------------------------------------------------------
install(FILES ${FABRICDIAG_DEPLOY_DIR}/systemd/fabricdiag-collector.service
  DESTINATION ${FABRICDIAG_SYSTEMD_UNIT_DIR} COMPONENT collector)
install(FILES ${FABRICDIAG_DEPLOY_DIR}/etc/default/fabricdiag-collector
  DESTINATION /etc/default COMPONENT collector)
# The documented defaults, copied (not duplicated in the tree): the unit
# passes --analysis_config=/etc/fabricdiag/analysis.yaml.
install(FILES ${FABRICDIAG_DEPLOY_DIR}/analysis.yaml
  DESTINATION /etc/fabricdiag COMPONENT collector)
install(FILES ${FABRICDIAG_DEPLOY_DIR}/systemd/fabricdiag-gnmi-bridge.service
  DESTINATION ${FABRICDIAG_SYSTEMD_UNIT_DIR} COMPONENT collector)
install(FILES ${FABRICDIAG_DEPLOY_DIR}/etc/default/fabricdiag-gnmi-bridge
  DESTINATION /etc/default COMPONENT collector)
install(FILES ${PROJECT_SOURCE_DIR}/README.md
  DESTINATION share/doc/fabricdiag-collector COMPONENT collector)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
  DESTINATION share/doc/fabricdiag-collector/docs COMPONENT collector
  FILES_MATCHING PATTERN "*.md")

# --- the Python module -----------------------------------------------------------
# Where Debian's python3 finds packages of every Python 3 version.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/fabricdiag/
  DESTINATION /usr/lib/python3/dist-packages/fabricdiag COMPONENT python
  FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(FILES ${PROJECT_SOURCE_DIR}/python/README.md
        ${PROJECT_SOURCE_DIR}/docs/integrations.md
  DESTINATION share/doc/python3-fabricdiag COMPONENT python)
# Python writes __pycache__ next to the modules when root imports them;
# without this prerm, dpkg would leave the directory behind on removal.
# ${DPKG_ROOT} is empty except when dpkg installs into another root.
set(FABRICDIAG_PYTHON_PRERM ${CMAKE_BINARY_DIR}/deploy/debian/python3-fabricdiag/prerm)
file(WRITE ${FABRICDIAG_PYTHON_PRERM} [=[#!/bin/sh
set -e
rm -rf "${DPKG_ROOT:-}/usr/lib/python3/dist-packages/fabricdiag/__pycache__"
exit 0
]=])

# --- maintainer scripts and conffiles -----------------------------------------
# CPack has no debhelper: the scripts (deploy/debian/*.in, debhelper's
# systemd snippets) are generated per package, and the /etc files are
# listed as conffiles by hand, so dpkg keeps an admin's edits on upgrade
# and asks before replacing them. Generated at configure time into
# <build>/deploy/debian/<package>/.
#   fabricdiag_debian_control(COMPONENT PACKAGE UNIT STATE_DIR INGEST_TOKEN
#                             CONFFILES...)
# STATE_DIR is the unit's StateDirectory= name the postrm deletes on purge
# ("" for none). INGEST_TOKEN: what the postinst does when
# /etc/fabricdiag/ingest-token is missing: "generate" or "placeholder".
function(fabricdiag_debian_control component package unit state_dir
         ingest_token)
  set(dir ${CMAKE_BINARY_DIR}/deploy/debian/${package})
  set(FABRICDIAG_PACKAGE ${package})
  set(FABRICDIAG_UNIT ${unit})
  set(FABRICDIAG_STATE_DIR "${state_dir}")
  set(FABRICDIAG_INGEST_TOKEN ${ingest_token})
  foreach(script postinst prerm postrm)
    configure_file(${FABRICDIAG_DEPLOY_DIR}/debian/${script}.in
      ${dir}/${script} @ONLY)
  endforeach()
  list(JOIN ARGN "\n" conffiles)
  file(WRITE ${dir}/conffiles "${conffiles}\n")
  string(TOUPPER ${component} upper)
  set(CPACK_DEBIAN_${upper}_PACKAGE_CONTROL_EXTRA
    ${dir}/conffiles ${dir}/postinst ${dir}/prerm ${dir}/postrm PARENT_SCOPE)
endfunction()

fabricdiag_debian_control(agent fabricdiag-agent fabricdiag-agent.service ""
  placeholder
  /etc/default/fabricdiag-agent)
fabricdiag_debian_control(collector fabricdiag-collector
  fabricdiag-collector.service fabricdiag generate
  /etc/default/fabricdiag-collector
  /etc/default/fabricdiag-gnmi-bridge
  /etc/fabricdiag/analysis.yaml)

# --- CPack -----------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fabricdiag)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "fabricdiag")
set(CPACK_PACKAGE_CONTACT "fabricdiag maintainers <fabricdiag@localhost>")
# The binaries land in /usr/bin (install(TARGETS ... DESTINATION bin)).
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# The DEB generator stages absolute destinations (/etc, /lib) inside the
# package tree itself; CPACK_SET_DESTDIR is not needed (and would make it
# ignore this prefix).

# Release binaries without their DWARF (a RelWithDebInfo collector is
# ~45 MB, stripped a few MB); the build tree keeps the unstripped ones.
set(CPACK_STRIP_FILES ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
# Only these become packages: "sim" and anything without a component
# (third-party install rules, if any) stay out.
set(CPACK_COMPONENTS_ALL agent collector python)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends from the binaries' NEEDED entries through dpkg-shlibdeps (gRPC,
# protobuf, abseil, prometheus-cpp, libevent, zlib, yaml-cpp, libibverbs, libc
# ...), so the list follows the code instead of being kept by hand.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Scripts 0755 and conffiles 0644 whatever the source tree's modes are.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_AGENT_PACKAGE_NAME fabricdiag-agent)
set(CPACK_DEBIAN_AGENT_DESCRIPTION
"fabricdiag node agent: RDMA and NIC counters for Prometheus
Reads RDMA port counters and hw_counters from sysfs, ethtool statistics
(per-priority PFC pause frames and durations), netdev statistics and
libibverbs port attributes; serves them on :9810/metrics and streams them
to a fabricdiag collector. Runs as a sandboxed dynamic user
(fabricdiag-agent.service); flags in /etc/default/fabricdiag-agent.")
set(CPACK_DEBIAN_COLLECTOR_PACKAGE_NAME fabricdiag-collector)
set(CPACK_DEBIAN_COLLECTOR_DESCRIPTION
"fabricdiag collector and ops CLI: fabric diagnosis for training jobs
Receives the agents' streams (gRPC :9811), joins them with the jobs'
parallelism layouts and the fabric topology, and reports hot-expert
incast, PFC storms, ECMP imbalance and more (HTTP :9812 /metrics). State
in /var/lib/fabricdiag, thresholds in /etc/fabricdiag/analysis.yaml,
settings in /etc/default/fabricdiag-collector. Includes the fabricdiag
command-line tool, and fabricdiag-gnmi-bridge (gNMI telemetry of switches
that run no agent; fabricdiag-gnmi-bridge.service, not enabled).")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-fabricdiag)
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SHLIBDEPS OFF)
# Standard library only; PyTorch is the training job's own business.
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3 (>= 3.8)")
set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA ${FABRICDIAG_PYTHON_PRERM})
set(CPACK_DEBIAN_PYTHON_DESCRIPTION
"fabricdiag: declare a training job's parallelism layout (Python)
The fabricdiag Python module: fabricdiag.torch.declare() gathers each
rank's host, GPU and NIC in a PyTorch job (and reads Megatron-LM's
parallel state), declares the job's layout to the fabricdiag collector over
its HTTP API with a lease, renews it from a thread and deletes it at exit.
Never stops training: a collector that is down or refuses is logged.
Standard library only; also `python3 -m fabricdiag declare` for scripts.")

include(CPack)

if(FABRICDIAG_SANITIZE)
  message(STATUS "fabricdiag: a sanitized build; do not ship its packages "
                 "(the binaries need the ASan/UBSan runtimes)")
endif()
