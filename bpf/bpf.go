// Package bpf holds xdpeng's BPF programs: the C sources, their bpf2go output
// (committed, so users build with Go alone) and a small Go loader for each.
//
// Regenerate with `make generate`, which sets MULTIARCH to the machine's
// multiarch triplet (x86_64-linux-gnu, aarch64-linux-gnu, ...): clang finds
// asm/types.h under /usr/include/$MULTIARCH.
package bpf

//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror" XskRedirect xsk_redirect.c -- -I/usr/include/$MULTIARCH
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror" XskRedirectMeta xsk_redirect_meta.c -- -I/usr/include/$MULTIARCH
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror" -type gen_state Gen gen.c -- -I/usr/include/$MULTIARCH
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror" kern kern.c -- -I/usr/include/$MULTIARCH
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -mcpu=v3" -type cpu_stats Latency latency.c -- -I/usr/include/$MULTIARCH
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror" XskSelftest xsk_selftest.c -- -I/usr/include/$MULTIARCH
