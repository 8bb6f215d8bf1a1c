/*
 * Notes which 4 KiB pages of a binary's code a run executes (bench/link_order.sh).
 *
 * Preloaded (LD_PRELOAD) into the process whose executable is $TRAP_EXE: before main,
 * its code mapping is made inaccessible; the first instruction run in each page faults,
 * the handler appends the page's file offset to $TRAP_OUT (write(2), async-signal-safe)
 * and makes the page executable again. The program's own SIGSEGV/SIGBUS handlers (Rust's
 * stack-overflow guard) are not installed while this runs, so the faults stay ours. A
 * measuring aid only: nothing of it is built into toolbelt.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <limits.h>
#include <stdlib.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <errno.h>
static unsigned long lo, hi, off; static int out = -1;
static void handler(int sig, siginfo_t *si, void *uc) {
    unsigned long a = (unsigned long)si->si_addr;
    if (a >= lo && a < hi) {
        unsigned long page = a & ~4095UL;
        mprotect((void*)page, 4096, PROT_READ|PROT_EXEC);
        char buf[32]; int n = 0; unsigned long v = page - lo + off; char tmp[32]; int k = 0;
        do { tmp[k++] = '0' + v % 10; v /= 10; } while (v);
        while (k) buf[n++] = tmp[--k];
        buf[n++] = '\n';
        write(out, buf, n);
        return;
    }
    signal(SIGSEGV, SIG_DFL);
}
typedef int (*sa_t)(int, const struct sigaction*, struct sigaction*);
int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    static sa_t real; if (!real) real = (sa_t)dlsym(RTLD_NEXT, "sigaction");
    if (out >= 0 && (sig == SIGSEGV || sig == SIGBUS) && act) { if (old) memset(old, 0, sizeof *old); return 0; }
    return real(sig, act, old);
}
__attribute__((constructor)) static void init(void) {
    const char *path = getenv("TRAP_OUT"); if (!path) return;
    char exe[PATH_MAX]; ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return; exe[n] = 0;
    const char *want = getenv("TRAP_EXE"); if (!want || strcmp(want, exe) != 0) return;
    FILE *f = fopen("/proc/self/maps", "r"); if (!f) return;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b, o; char perms[8];
        if (sscanf(line, "%lx-%lx %7s %lx", &a, &b, perms, &o) != 4) continue;
        char *p = strchr(line, '/'); if (!p) continue;
        p[strcspn(p, "\n")] = 0;
        if (strcmp(p, exe) == 0 && perms[2] == 'x') { lo = a; hi = b; off = o; }
    }
    fclose(f);
    if (!lo) return;
    out = open(path, O_WRONLY|O_CREAT|O_APPEND|O_CLOEXEC, 0644);
    struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_sigaction = handler; sa.sa_flags = SA_SIGINFO|SA_NODEFER;
    sa_t real = (sa_t)dlsym(RTLD_NEXT, "sigaction"); real(SIGSEGV, &sa, 0);
    mprotect((void*)lo, hi - lo, PROT_NONE);
}
