# xdpeng — the only entry points a user needs. `make build` and `make demo`
# need only Go; `make test` installs with apt what else it needs (`make deps`,
# the list in .ci/packages); `make generate` needs clang, llvm and libbpf-dev
# (also installed by `make deps`); `make demo`, `make test`, `make bench`,
# `make soak` and `make install` need root (sudo).
#
# Go from PATH, else where go.dev's tarball puts it (sudo's secure_path
# leaves /usr/local/go/bin out).
GO      ?= $(or $(shell command -v go 2>/dev/null),$(wildcard /usr/local/go/bin/go),go)
# The tests and go generate run `go` too: the same one.
GODIR   := $(patsubst %/,%,$(dir $(GO)))
ifneq ($(GODIR),.)
export PATH := $(GODIR):$(PATH)
endif
BIN     := bin/xdpeng
# make install puts the binary in $(DESTDIR)$(PREFIX)/bin, where sudo's PATH
# (secure_path) finds it, the manual pages (generated from the commands'
# help: man xdpeng, man xdpeng-rxdrop, ...) in $(MANDIR)/man1 and the bash,
# zsh and fish completion files where those shells look under $(PREFIX).
PREFIX  ?= /usr/local
MANDIR  ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
# Three modules, one workspace (go.work): the library (this directory:
# engine, xsk, bpf and what they need), the lab (internal/lab) and the CLI
# (cmd), each with its own go.mod; the lab and the CLI depend on the
# library, never the other way.
MODULES := . ./internal/lab ./cmd
PKGS    := ./... ./internal/lab/... ./cmd/...
# make test runs the lab's packages (test beds, generators, the measuring
# commands' harness) without the race detector, the rest with it: the lab's
# integration tests drive threads in other network namespaces through
# netlink and BPF syscalls, where the detector reported races between
# unrelated objects (a netlink request's bytes and a cilium/ebpf error
# string), one TestNDREnginePaths run in three or four, on the code of
# stop 41 as on today's; and it slows the rates those tests measure.
# make unit runs every package's unit tests under the race detector. The
# library's own integration tests, which the lab's module holds because they
# drive the library on its test beds (internal/lab/libtest), run with it.
LAB_PKGS := ./internal/lab/...
# Fuzz targets run briefly in `make test`; longer with `make fuzz FUZZTIME=5m`.
# The default is a count, not a duration: Go 1.26's fuzzer can fail a target
# with a spurious "context deadline exceeded" when a duration runs out while a
# worker is mid-run (go.dev/issue/75804, fixed in Go 1.27).
FUZZTIME ?= 20000x

.PHONY: all build docs install uninstall deps test unit fuzz generate generate-check bench demo lint soak selftest clean vmtest vm-deps

all: build

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/xdpeng

# The manual pages and completion files, from the commands themselves
# (xdpeng docs), beside the binary: bin/man, bin/completion.
GENDIR = $(dir $(BIN))
docs: build
	rm -rf $(GENDIR)man $(GENDIR)completion
	$(abspath $(BIN)) docs --man $(GENDIR)man --completion $(GENDIR)completion

install: build docs
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/xdpeng
	install -d $(DESTDIR)$(MANDIR)/man1
	install -m 0644 $(GENDIR)man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -D -m 0644 $(GENDIR)completion/xdpeng $(DESTDIR)$(BASHCOMPDIR)/xdpeng
	install -D -m 0644 $(GENDIR)completion/_xdpeng $(DESTDIR)$(ZSHCOMPDIR)/_xdpeng
	install -D -m 0644 $(GENDIR)completion/xdpeng.fish $(DESTDIR)$(FISHCOMPDIR)/xdpeng.fish

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/xdpeng
	rm -f $(DESTDIR)$(MANDIR)/man1/xdpeng.1 $(DESTDIR)$(MANDIR)/man1/xdpeng-*.1
	rm -f $(DESTDIR)$(BASHCOMPDIR)/xdpeng $(DESTDIR)$(ZSHCOMPDIR)/_xdpeng $(DESTDIR)$(FISHCOMPDIR)/xdpeng.fish

# Install with apt what .ci/packages lists and this machine lacks, saying
# what (DEPS_DRY_RUN=1: only say it); check that Go is new enough.
deps:
	@GO=$(GO) .ci/deps $(if $(DEPS_DRY_RUN),-n)

# Unit and integration tests, all under the race detector, then the fuzz
# targets briefly. The integration tests need root; here (and so in CI) one
# that cannot run fails rather than skips (XDPENG_REQUIRE_PRIV=1); each
# package's count is printed at the end (with the reason of each skip), then
# their total: none may be skipped, and only a kernel without a feature may
# leave some "not supported here".
# Packages run one at a time (-p 1): several integration tests offer and
# measure rates on the machine's few CPUs, and a package running beside them
# takes those CPUs (a paced generator then falls behind its rate).
# Without root, `go test ./...` runs the unit tests and skips the others.
# First it installs what the tests need (make deps).
test:
	@if [ "$$(id -u)" != 0 ]; then \
		echo "make test: the integration tests need root (network namespaces, BPF programs, AF_XDP sockets): run it as root (sudo make test); make unit runs the unit tests alone and skips the rest" >&2; \
		exit 1; \
	fi
	@$(MAKE) --no-print-directory deps build lint
	@report=$$(mktemp) && trap 'rm -f "$$report"' EXIT && \
	XDPENG_REQUIRE_PRIV=1 XDPENG_PRIV_REPORT="$$report" $(GO) test -race -p 1 -count=1 -timeout 30m $$($(GO) list $(PKGS) | grep -v /internal/lab/) ./internal/lab/libtest/...; status=$$?; \
	XDPENG_REQUIRE_PRIV=1 XDPENG_PRIV_REPORT="$$report" $(GO) test -p 1 -count=1 -timeout 30m $$($(GO) list $(LAB_PKGS) | grep -v /internal/lab/libtest/) || status=1; \
	sort -s -k2,2 "$$report"; \
	awk '/privileged tests ran/ { ran += $$3; skipped += $$7; unsup += $$9 } \
		END { printf "privileged tests: %d ran, %d skipped, %d not supported here\n", ran, skipped, unsup; \
		      if (ran == 0) { print "make test: no privileged test ran" > "/dev/stderr"; exit 1 } \
		      if (skipped != 0) exit 1 }' "$$report" && exit $$status
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME)
	@if [ "$(VM)" != 0 ]; then $(MAKE) vmtest; else echo "make test: the kernel matrix left out (VM=0)"; fi

# The kernel matrix, run by make test (make test VM=0 leaves it out): a
# QEMU guest (TCG) on each of Debian's kernels in VM_KERNELS runs the CLI's
# guest tests (go test -c -tags vmguest ./cmd/xdpeng) against virtio-net,
# then a link taken down and up from QEMU's monitor. A kernel ending in "?"
# may be unavailable from the mirror: then "not supported here", with why.
# Kernels are fetched once with apt into /var/cache/xdpeng/kernels.
# Each kernel's privtest line and times are printed at the end.
VM ?= 1
VM_KERNELS ?= 6.1 6.12 5.10? backports?
# What the VM bed needs from apt is in .ci/packages with the rest.
vm-deps: deps

vmtest: build
	@if [ "$$(id -u)" != 0 ]; then echo "make vmtest: needs root (network namespaces, taps, QEMU): run sudo make vmtest" >&2; exit 1; fi
	@$(MAKE) --no-print-directory vm-deps
	@dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && \
	$(GO) test -c -tags vmguest -o "$$dir/xdpeng.test" ./cmd/xdpeng && \
	XDPENG_VM_KERNELS="$(VM_KERNELS)" XDPENG_VM_GUEST_TEST="$$dir/xdpeng.test" XDPENG_VM_XDPENG="$(abspath $(BIN))" \
	XDPENG_REQUIRE_PRIV=1 XDPENG_PRIV_REPORT="$$dir/report" \
	$(GO) test -count=1 -timeout 45m -run '^TestKernelMatrix$$' ./internal/lab/vm; status=$$?; \
	sort -s -k2,2 "$$dir/report"; \
	awk '/privileged tests ran/ { ran += $$3; skipped += $$7; unsup += $$9 } \
		END { printf "kernel matrix: %d privileged tests ran, %d skipped, %d not supported here\n", ran, skipped, unsup; \
		      if (ran == 0) { print "make vmtest: no privileged test ran" > "/dev/stderr"; exit 1 } \
		      if (skipped != 0) exit 1 }' "$$dir/report" && exit $$status

# The unit tests alone, as any user: every test that needs privilege skips,
# and each package says how many it skipped and why.
unit:
	@out=$$(mktemp); $(GO) test -race -count=1 -v $(PKGS) > "$$out" 2>&1; status=$$?; \
	if [ $$status = 0 ]; then grep -E '^(ok|privtest)' "$$out"; else grep -v -E '^(=== |--- PASS|--- SKIP|PASS$$)' "$$out"; fi; \
	rm -f "$$out"; exit $$status

fuzz:
	@set -e; for t in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs grep -ho '^func Fuzz[A-Za-z0-9_]*' | sed 's/^func //' | sort -u); do \
		pkg=$$(dirname $$(grep -rl --include='*_test.go' "^func $$t(" . | head -1)); \
		echo "fuzz $$t in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# The multiarch triplet under /usr/include where clang finds asm/types.h
# (x86_64-linux-gnu, aarch64-linux-gnu, ...): gcc's, else dpkg's, else one
# made from uname -m.
MULTIARCH ?= $(or $(shell gcc -print-multiarch 2>/dev/null),$(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null),$(shell uname -m)-linux-gnu)

# Regenerate the BPF objects and their Go bindings (committed).
generate:
	@command -v clang >/dev/null && command -v llvm-strip >/dev/null || { echo "make generate needs clang and llvm (llvm-strip): run make deps as root, or apt-get install clang llvm libbpf-dev" >&2; exit 1; }
	@test -d /usr/include/$(MULTIARCH)/asm || { echo "no /usr/include/$(MULTIARCH)/asm: install linux-libc-dev, or set MULTIARCH=..." >&2; exit 1; }
	cd bpf && MULTIARCH=$(MULTIARCH) $(GO) generate ./...

# Fail if the committed BPF objects differ from what the sources give.
generate-check: generate
	git diff --exit-code -- bpf/ || (echo "bpf/: generated files are stale: run make generate and commit" >&2; exit 1)

# The public packages (engine, engine/handler, engine/packet, xsk) build, and
# their tests compile and pass vet, on other operating systems too, so that a
# handler's tests run (through engine.Simulate) on a developer's laptop.
PORTABLE_OS = darwin windows

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out" >&2; exit 1; fi
	$(GO) vet $(PKGS)
	@for m in $(MODULES); do \
		echo "(cd $$m && GOWORK=off go mod tidy -diff && GOWORK=off go vet ./...)"; \
		(cd $$m && GOWORK=off $(GO) mod tidy -diff && GOWORK=off $(GO) vet ./...) || { echo "make lint: $$m: its go.mod is not what go mod tidy makes, or it does not build as a module of its own" >&2; exit 1; }; \
	done
	@for os in $(PORTABLE_OS); do \
		echo "GOOS=$$os go build ./engine/... ./xsk/... && GOOS=$$os go vet ./engine/... ./xsk/..."; \
		GOOS=$$os $(GO) build ./engine/... ./xsk/... && GOOS=$$os $(GO) vet ./engine/... ./xsk/... || exit 1; \
	done

# Micro-benchmarks (0 allocs, ns per frame), then the performance targets on
# the test bed: each layout 3 times, medians and ratios (a few minutes).
# BENCH_JSON=file also writes the test-bed figures as JSON lines.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	./$(BIN) bench
	@if [ -n "$(BENCH_JSON)" ]; then ./$(BIN) bench --runs 1 --json > "$(BENCH_JSON)"; fi

demo: build
	@if [ "$$(id -u)" != 0 ]; then \
		echo "make demo: the demo makes network namespaces and attaches BPF programs: run it as root (sudo make demo)" >&2; \
		exit 1; \
	fi
	./$(BIN) demo

# The kernel's AF_XDP conformance tests (xskxceiver's, as xdpeng selftest
# runs them) on a veth bed of their own, in generic (skb) and native (drv)
# mode; it needs root, and fails when a test fails.
selftest: build
	./$(BIN) selftest --modes skb,drv

soak: build
	XDPENG_SOAK=60s $(GO) test -count=1 -run Soak -v -timeout 30m ./internal/lab/libtest/engine

clean:
	rm -rf bin
