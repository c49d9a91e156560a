# Set-up that installs itself. Before the first compile `make` checks the build dependencies (a C
# compiler, the zstd and xxhash headers and libraries; for the CLI also libmicrohttpd's, unless
# SERVE=0); `make test` checks, when it builds its
# fixtures, python3-numpy (the llama.cpp golden models) and npm (the Qwen3 vocabulary), and
# pkg-config (the installed-library test). What is
# missing is installed with apt-get when make runs as root on a machine that has it (one line says
# so); otherwise make stops with one line giving the command to run.
#
# For tests: DEPS_PROBE_FLAGS adds compiler flags to the header/library probes only (an -I folder
# of '#error' headers stands for a machine without the packages), APT_GET names the installer and
# DEPS_UID stands for the user id.
DEPS_PROBE_FLAGS ?=
APT_GET ?= apt-get
DEPS_UID ?= $$(id -u)

# $(call pf_need,CHECK,PACKAGE): shell adding PACKAGE to $missing when CHECK fails.
pf_need = { ( $(1) ) >/dev/null 2>&1 || missing="$$missing $(2)"; }

# $(call pf_ensure,WHAT,NEEDS): run the pf_need list NEEDS; install what is missing (root with
# apt-get), then check again; otherwise stop with the command to run.
# Two makes at once (make -j, or two build folders) take turns at the install (flock on a file in
# TMPDIR), and the second checks again once it has the lock: apt-get refuses a second apt-get.
pf_ensure = missing=""; $(2); \
if [ -n "$$missing" ] && [ "$(DEPS_UID)" = 0 ] && command -v $(APT_GET) >/dev/null 2>&1 && command -v flock >/dev/null 2>&1; then \
    exec 9>>"$${TMPDIR:-/tmp}/pocketflash-deps.lock" && flock 9; missing=""; $(2); \
fi; \
if [ -n "$$missing" ]; then \
    if [ "$(DEPS_UID)" = 0 ] && command -v $(APT_GET) >/dev/null 2>&1; then \
        echo "pocketflash: $(1) missing, installing with apt-get:$$missing"; \
        { DEBIAN_FRONTEND=noninteractive $(APT_GET) update -qq && \
          DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq --no-install-recommends $$missing; } >/dev/null 2>&1; \
        want="$$missing"; missing=""; $(2); \
        if [ -n "$$missing" ]; then echo "pocketflash: apt-get did not provide$$missing; run: apt-get install$$want"; exit 1; fi; \
    elif command -v apt-get >/dev/null 2>&1; then \
        echo "pocketflash: $(1) missing; run: sudo apt-get install$$missing"; exit 1; \
    else \
        echo "pocketflash: $(1) missing; install them (Debian/Ubuntu: sudo apt-get install$$missing)"; exit 1; \
    fi; \
fi

# $(call pf_probe,HEADER,CALL,LIB): compiles and links a program that includes HEADER and calls CALL
# from -lLIB.
pf_probe = d=$$(mktemp -d) && printf '\#include <%s>\nint main(void) { return !%s; }\n' $(1) '$(2)' >$$d/p.c && \
    $(CC) $(DEPS_PROBE_FLAGS) $$d/p.c -o $$d/p -l$(3); r=$$?; rm -rf $$d; exit $$r

PF_ENSURE_BUILD = $(call pf_ensure,build dependencies,$(call pf_need,command -v $(CC),build-essential); \
    $(call pf_need,$(call pf_probe,zstd.h,ZSTD_versionNumber(),zstd),libzstd-dev); \
    $(call pf_need,$(call pf_probe,xxhash.h,XXH_versionNumber(),xxhash),libxxhash-dev))
# The CLI's HTTP server (pocketflash serve); the library does not link it.
PF_ENSURE_SERVE = $(call pf_ensure,build dependencies,$(call pf_need,$(call pf_probe,microhttpd.h,MHD_get_version(),microhttpd),libmicrohttpd-dev))
PF_ENSURE_NUMPY = $(call pf_ensure,test dependencies,$(call pf_need,$(PYTHON) -c 'import numpy',python3-numpy))
PF_ENSURE_NPM = $(call pf_ensure,test dependencies,$(call pf_need,command -v npm,npm))
# tests/api/test_install.c builds the README's program through pkg-config
PF_ENSURE_PKGCONFIG = $(call pf_ensure,test dependencies,$(call pf_need,command -v pkg-config,pkg-config))

# Checked once per build folder (make clean forgets it), before any object is compiled.
$(BUILD)/.deps-ok:
	@$(PF_ENSURE_BUILD)
	@mkdir -p $(@D) && touch $@
$(LIB_OBJ) $(CLI_OBJ) $(TEST_OBJ): | $(BUILD)/.deps-ok
$(BUILD)/.deps-serve-ok: | $(BUILD)/.deps-ok
	@$(PF_ENSURE_SERVE)
	@mkdir -p $(@D) && touch $@
ifneq ($(SERVE),0)
$(CLI_OBJ): | $(BUILD)/.deps-serve-ok
endif

# Checks (and installs) now, whatever was checked before.
.PHONY: deps
deps:
	@$(PF_ENSURE_BUILD)
	@$(if $(filter 0,$(SERVE)),true,$(PF_ENSURE_SERVE))
