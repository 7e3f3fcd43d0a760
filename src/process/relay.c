/*
 * evalua's relay: the first program inside the sandbox when the caller's
 * stdin and stdout come in as descriptors 3 and 4 (see RELAY in sandbox.rs).
 *
 *     relay LIMITS PROGRAM [ARG...]
 *
 * first applies LIMITS, the process limit of the tree it starts (one word,
 * written by evalua: `-` for none, or any of):
 *   `c`   join the cgroup whose `tasks` is open on descriptor 6 (a pids
 *         cgroup with its `pids.max`) by writing 0 (this thread, the only
 *         one: the kernel then skips its global threadgroup lock), then
 *         close 6;
 *   `nN`  set RLIMIT_NPROC (soft and hard) to N: in the sandbox's own user
 *         namespace, processes are counted per namespace, so N bounds this
 *         tree alone (where no cgroup can be made: as a non-root user);
 * then puts 3 on 0 and 4 on 1, closes 3, 4 and 5 (the descriptor bubblewrap read
 * this program from), and becomes PROGRAM, looked up on PATH when it has no
 * slash, as `exec "$@" <&3 >&4 3<&- 4>&-` in /bin/sh does: exit 127 when it
 * is not found, 126 when it cannot be run.
 *
 * Why not the shell: a sandbox starts per agent and per tool command, and a
 * dynamically linked shell costs about a millisecond of loading before its one
 * line runs (issue 24 measured the sandbox's cost per trial). This is a static
 * program with no C library: a few system calls, then execve.
 *
 * Built by build.rs with -nostdlib -static for x86_64 and aarch64 Linux; on
 * any other target build.rs builds nothing and the shell line is used.
 */

#if defined(__x86_64__)
#define SYS_write 1
#define SYS_close 3
#define SYS_execve 59
#define SYS_exit 60
#define SYS_dup3 292
#define SYS_setrlimit 160
__asm__(".text\n.global _start\n_start:\n"
        "  xor %rbp, %rbp\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call relay_main\n"
        "  hlt\n");
static long sys3(long n, long a, long b, long c) {
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return r;
}
#elif defined(__aarch64__)
#define SYS_write 64
#define SYS_close 57
#define SYS_execve 221
#define SYS_exit 93
#define SYS_dup3 24
#define SYS_setrlimit 164
__asm__(".text\n.global _start\n_start:\n"
        "  mov x29, #0\n"
        "  mov x0, sp\n"
        "  bl relay_main\n"
        "  brk #0\n");
static long sys3(long n, long a, long b, long c) {
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    return x0;
}
#else
#error "the relay is built for x86_64 and aarch64 Linux only"
#endif

#define ENOENT 2
#define ENOTDIR 20
#define PATH_MAX 4096
#define RLIMIT_NPROC 6
#define CGROUP_FD 6

static void die(const char *what, const char *name, int code) __attribute__((noreturn));

static unsigned long len(const char *s) {
    unsigned long n = 0;
    while (s[n]) n++;
    return n;
}

static void say(const char *s) { sys3(SYS_write, 2, (long)s, (long)len(s)); }

static void die(const char *what, const char *name, int code) {
    say("evalua-relay: ");
    say(name);
    say(what);
    for (;;) sys3(SYS_exit, code, 0, 0);
}

static int has_slash(const char *s) {
    for (; *s; s++)
        if (*s == '/') return 1;
    return 0;
}

/* The tree's process limit (see LIMITS above); a limit asked for and not
 * applied ends the start (exit 126): no tree runs unbounded by mistake. */
static void limit(const char *opts) {
    for (const char *o = opts; *o;) {
        if (*o == 'c') {
            if (sys3(SYS_write, CGROUP_FD, (long)"0", 1) != 1) die(": could not join its process limit's cgroup\n", "", 126);
            sys3(SYS_close, CGROUP_FD, 0, 0);
            o++;
        } else if (*o == 'n') {
            unsigned long n = 0;
            for (o++; *o >= '0' && *o <= '9'; o++) n = n * 10 + (unsigned long)(*o - '0');
            unsigned long lim[2] = {n, n};
            if (sys3(SYS_setrlimit, RLIMIT_NPROC, (long)lim, 0) != 0) die(": could not set its process limit\n", "", 126);
        } else {
            o++;
        }
    }
}

__attribute__((used)) void relay_main(long *sp) {
    long argc = sp[0];
    char **argv = (char **)(sp + 1);
    char **envp = argv + argc + 1;
    if (argc < 3) die(": no program to run\n", "", 127);
    limit(argv[1]);
    argv++;
    if (sys3(SYS_dup3, 3, 0, 0) < 0 || sys3(SYS_dup3, 4, 1, 0) < 0) die(": descriptors 3 and 4 are not open\n", "", 127);
    sys3(SYS_close, 3, 0, 0);
    sys3(SYS_close, 4, 0, 0);
    sys3(SYS_close, 5, 0, 0);
    char *prog = argv[1];
    char **args = argv + 1;
    if (has_slash(prog)) {
        long e = sys3(SYS_execve, (long)prog, (long)args, (long)envp);
        int missing = e == -ENOENT || e == -ENOTDIR;
        die(missing ? ": not found\n" : ": cannot run\n", prog, missing ? 127 : 126);
    }
    /* PATH lookup, as the shell does it: an empty entry is the current folder. */
    const char *path = "/usr/local/bin:/usr/bin:/bin";
    for (char **e = envp; *e; e++) {
        const char *v = *e;
        if (v[0] == 'P' && v[1] == 'A' && v[2] == 'T' && v[3] == 'H' && v[4] == '=') {
            path = v + 5;
            break;
        }
    }
    static char buf[PATH_MAX];
    unsigned long plen = len(prog);
    int denied = 0;
    for (const char *p = path;;) {
        const char *end = p;
        while (*end && *end != ':') end++;
        unsigned long dlen = (unsigned long)(end - p);
        if (dlen + 1 + plen + 1 <= PATH_MAX) {
            unsigned long n = 0;
            for (const char *q = p; q < end; q++) buf[n++] = *q;
            if (dlen) buf[n++] = '/';
            for (unsigned long i = 0; i < plen; i++) buf[n++] = prog[i];
            buf[n] = 0;
            long r = sys3(SYS_execve, (long)buf, (long)args, (long)envp);
            if (r != -ENOENT && r != -ENOTDIR) denied = 1;
        }
        if (!*end) break;
        p = end + 1;
    }
    die(denied ? ": cannot run\n" : ": not found\n", prog, denied ? 126 : 127);
}
