# xdpeng — the only entry points a user needs. `make build` needs only Go;
# `make generate` needs clang, llvm and libbpf-dev; `make demo`, `make test`,
# `make bench`, `make soak` and `make install` need root (sudo).
GO      ?= go
BIN     := bin/xdpeng
# make install puts the binary in $(DESTDIR)$(PREFIX)/bin, where sudo's PATH
# (secure_path) finds it.
PREFIX  ?= /usr/local
PKGS    := ./...
# Fuzz targets run briefly in `make test`; longer with `make fuzz FUZZTIME=5m`.
# The default is a count, not a duration: Go 1.26's fuzzer can fail a target
# with a spurious "context deadline exceeded" when a duration runs out while a
# worker is mid-run (go.dev/issue/75804, fixed in Go 1.27).
FUZZTIME ?= 20000x

.PHONY: all build install uninstall test unit fuzz generate generate-check bench demo lint soak clean vmtest vm-deps

all: build

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/xdpeng

install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/xdpeng

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/xdpeng

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
test: build lint
	@if [ "$$(id -u)" != 0 ]; then \
		echo "make test: the integration tests need root (network namespaces, BPF programs, AF_XDP sockets): run sudo make test (go test ./... runs the unit tests alone and skips the rest)" >&2; \
		exit 1; \
	fi
	@report=$$(mktemp) && trap 'rm -f "$$report"' EXIT && \
	XDPENG_REQUIRE_PRIV=1 XDPENG_PRIV_REPORT="$$report" $(GO) test -race -p 1 -count=1 -timeout 30m $(PKGS); status=$$?; \
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
VM_KERNELS ?= 6.1 6.12 5.10?
# What the VM bed needs from apt (installed by vm-deps when missing).
VM_PACKAGES := qemu-system-x86 busybox-static openssh-server openssh-client xz-utils zstd iproute2

vm-deps:
	@need=""; for p in $(VM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || need="$$need $$p"; done; \
	if [ -n "$$need" ]; then \
		echo "vm-deps: installing$$need"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$need >/dev/null; \
	fi

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
	@test -d /usr/include/$(MULTIARCH)/asm || { echo "no /usr/include/$(MULTIARCH)/asm: install linux-libc-dev, or set MULTIARCH=..." >&2; exit 1; }
	cd bpf && MULTIARCH=$(MULTIARCH) $(GO) generate ./...

# Fail if the committed BPF objects differ from what the sources give.
generate-check: generate
	git diff --exit-code -- bpf/ || (echo "bpf/: generated files are stale: run make generate and commit" >&2; exit 1)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out" >&2; exit 1; fi
	$(GO) vet $(PKGS)

# Micro-benchmarks (0 allocs, ns per frame), then the performance targets on
# the test bed: each layout 3 times, medians and ratios (a few minutes).
# BENCH_JSON=file also writes the test-bed figures as JSON lines.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./internal/... ./engine/...
	./$(BIN) bench
	@if [ -n "$(BENCH_JSON)" ]; then ./$(BIN) bench --runs 1 --json > "$(BENCH_JSON)"; fi

demo: build
	./$(BIN) demo

soak: build
	XDPENG_SOAK=60s $(GO) test -count=1 -run Soak -v -timeout 30m ./engine/...

clean:
	rm -rf bin
