/* refcat_cmd.c — a reference catalog from a user command, run without a shell.
 *
 * The template is split into words first and the placeholders are substituted inside the
 * words afterwards, so a substituted value can never become a second word, a redirection or
 * a command; the program is started with posix_spawnp (no /bin/sh), in a process group of its
 * own, so that past its time limit the whole group (the command and what it started) is
 * stopped. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tide/refcat.h"
#include "tide/status.h"
#include "tide/timer.h"

extern char **environ;

void tide_refcat_argv_free(char **argv) {
    if (!argv)
        return;
    for (char **a = argv; *a; a++)
        free(*a);
    free(argv);
}

/* Append text to a growing word. */
static int word_add(char **w, size_t *len, size_t *cap, const char *s, size_t n) {
    if (*len + n + 1 > *cap) {
        size_t nc = (*cap ? *cap : 64);
        while (nc < *len + n + 1)
            nc *= 2;
        char *nw = realloc(*w, nc);
        if (!nw)
            return -1;
        *w = nw;
        *cap = nc;
    }
    memcpy(*w + *len, s, n);
    *len += n;
    (*w)[*len] = 0;
    return 0;
}

/* Substitute {ra} {dec} {radius} {out} in one raw word. */
static int substitute(const char *raw, const double val[3], const char *outfile, char **res,
                      int *names_out) {
    static const char *const keys[3] = {"{ra}", "{dec}", "{radius}"};
    char *w = NULL;
    size_t len = 0, cap = 0;
    if (word_add(&w, &len, &cap, "", 0))
        return tide_error(TIDE_E_NOMEM, "refcat command: no memory");
    for (const char *p = raw; *p;) {
        if (*p == '{') {
            int hit = 0;
            for (int k = 0; k < 3 && !hit; k++) {
                const size_t kl = strlen(keys[k]);
                if (!strncmp(p, keys[k], kl)) {
                    char num[64];
                    snprintf(num, sizeof num, "%.9f", val[k]);
                    if (word_add(&w, &len, &cap, num, strlen(num)))
                        goto nomem;
                    p += kl;
                    hit = 1;
                }
            }
            if (!hit && !strncmp(p, "{out}", 5)) {
                *names_out = 1;
                const char *o = outfile ? outfile : "{out}";
                if (word_add(&w, &len, &cap, o, strlen(o)))
                    goto nomem;
                p += 5;
                hit = 1;
            }
            if (!hit) {
                const char *e = strchr(p, '}');
                int l = e ? (int)(e - p + 1) : (int)strlen(p);
                free(w);
                return tide_error(TIDE_E_INVAL,
                                  "refcat command: unknown placeholder '%.*s' (known: {ra} "
                                  "{dec} {radius} {out})",
                                  l, p);
            }
            continue;
        }
        if (word_add(&w, &len, &cap, p, 1))
            goto nomem;
        p++;
    }
    *res = w;
    return 0;
nomem:
    free(w);
    return tide_error(TIDE_E_NOMEM, "refcat command: no memory");
}

int tide_refcat_command_argv(const char *tpl, double ra, double dec, double radius_deg,
                             const char *outfile, char ***argv_out, int *argc_out, int *names_out) {
    *argv_out = NULL;
    *argc_out = 0;
    *names_out = 0;
    if (!tpl)
        return tide_error(TIDE_E_INVAL, "refcat command: no command");
    const double val[3] = {ra, dec, radius_deg};
    const size_t tl = strlen(tpl);
    char **argv = calloc(tl / 2 + 2, sizeof *argv); /* words are separated by blanks */
    char *raw = malloc(tl + 1);
    int argc = 0, st = 0;
    if (!argv || !raw)
        st = tide_error(TIDE_E_NOMEM, "refcat command: no memory");
    const char *p = tpl;
    while (!st) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        size_t rl = 0;
        char quote = 0;
        while (*p && (quote || (*p != ' ' && *p != '\t' && *p != '\n'))) {
            if (quote) {
                if (*p == quote)
                    quote = 0;
                else
                    raw[rl++] = *p;
            } else if (*p == '\'' || *p == '"') {
                quote = *p;
            } else {
                raw[rl++] = *p;
            }
            p++;
        }
        if (quote) {
            st =
                tide_error(TIDE_E_INVAL, "refcat command: unbalanced %c quote in '%s'", quote, tpl);
            break;
        }
        raw[rl] = 0;
        st = substitute(raw, val, outfile, &argv[argc], names_out);
        if (!st)
            argc++;
    }
    free(raw);
    if (!st && argc == 0)
        st = tide_error(TIDE_E_INVAL, "refcat command: the command is empty");
    if (st) {
        tide_refcat_argv_free(argv);
        return st;
    }
    *argv_out = argv;
    *argc_out = argc;
    return 0;
}

/* A fresh private temporary directory (mode 0700): the command's {out} file does not exist
 * yet when it starts (cfitsio refuses to overwrite an existing file without '!'). */
static int make_temp_dir(char *path, size_t len) {
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    snprintf(path, len, "%s/tide-refcat-XXXXXX", dir);
    if (!mkdtemp(path))
        return tide_error(TIDE_E_IO,
                          "refcat command: cannot create a temporary directory in "
                          "%s: %s",
                          dir, strerror(errno));
    return 0;
}

/* Has the started command exited (1; 0 running, -1 error)? Checked without reaping it
 * (WNOWAIT): while it is not reaped its pid, which is its process group's id, cannot be given
 * to another process, so a signal to the group never reaches a stranger. */
static int exited(pid_t pid) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return errno == EINTR ? 0 : -1;
    return si.si_pid == pid;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* The time limit: the command's whole process group (it and whatever it started) gets
 * SIGTERM, up to 1 s to finish, then SIGKILL; the command is reaped (its children, orphaned,
 * are reaped by init). */
static void kill_group(pid_t pid) {
    kill(-pid, SIGTERM);
    for (int i = 0; i < 200 && exited(pid) == 0; i++)
        sleep_ms(5);
    kill(-pid, SIGKILL); /* its children too, when they outlived it or ignore SIGTERM */
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
}

/* Start argv with stdout to @p stdout_path (/dev/null when NULL: the library prints nothing,
 * not even through a child), in a process group of its own, and wait with a limit. */
static int run(char **argv, const char *stdout_path, double timeout_s) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    if (posix_spawn_file_actions_init(&fa))
        return tide_error(TIDE_E_NOMEM, "refcat command: no memory");
    if (posix_spawnattr_init(&at)) {
        posix_spawn_file_actions_destroy(&fa);
        return tide_error(TIDE_E_NOMEM, "refcat command: no memory");
    }
    int st = 0;
    if (posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) ||
        posix_spawn_file_actions_addopen(&fa, 1, stdout_path ? stdout_path : "/dev/null",
                                         O_WRONLY | O_CREAT | O_TRUNC, 0600) ||
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP) || posix_spawnattr_setpgroup(&at, 0))
        st = tide_error(TIDE_E_NOMEM, "refcat command: no memory");
    pid_t pid = 0;
    if (!st) {
        int e = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
        if (e)
            st = tide_error(TIDE_E_IO, "refcat command: cannot start '%s': %s", argv[0],
                            strerror(e));
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (st)
        return st;
    const double t0 = tide_now();
    int status = 0;
    for (;;) {
        const int x = exited(pid);
        if (x < 0)
            return tide_error(TIDE_E_IO, "refcat command '%s': waitid: %s", argv[0],
                              strerror(errno));
        if (x) {
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            break;
        }
        if (tide_now() - t0 > timeout_s) {
            kill_group(pid);
            return tide_error(TIDE_E_TIMEOUT, "refcat command '%s' ran past %.0f s and was killed",
                              argv[0], timeout_s);
        }
        sleep_ms(5); /* 5 ms polls: commands take seconds */
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status))
        return tide_error(TIDE_E_IO, "refcat command '%s' exited with status %d", argv[0],
                          WEXITSTATUS(status));
    return tide_error(TIDE_E_IO, "refcat command '%s' was killed by signal %d", argv[0],
                      WIFSIGNALED(status) ? WTERMSIG(status) : -1);
}

int tide_refcat_from_command(const char *cmd_template, double ra, double dec, double radius_deg,
                             const tide_refcat_columns *cols, double timeout_s, tide_table *out) {
    tide_table_init(out);
    if (!(radius_deg > 0))
        return tide_error(TIDE_E_INVAL, "refcat command: radius %g deg must be > 0", radius_deg);
    const double rad = radius_deg + tide_refcat_margin_deg(radius_deg);
    char dir[3800], tmp[4096];
    int st = make_temp_dir(dir, sizeof dir);
    if (st)
        return st;
    snprintf(tmp, sizeof tmp, "%s/catalog", dir);
    char **argv = NULL;
    int argc = 0, names_out = 0;
    st = tide_refcat_command_argv(cmd_template, ra, dec, rad, tmp, &argv, &argc, &names_out);
    if (!st)
        st = run(argv, names_out ? NULL : tmp, timeout_s > 0 ? timeout_s : 60.0);
    if (!st) {
        char name[256];
        snprintf(name, sizeof name, "refcat command '%s'", argv[0]);
        st = tide_refcat_read(tmp, cols, out);
        if (st)
            tide_error_prefix(st, "%s: ", name);
        else
            st = tide_refcat_cone(out, ra, dec, rad, name);
    }
    tide_refcat_argv_free(argv);
    unlink(tmp);
    rmdir(dir);
    if (st)
        tide_table_free(out);
    return st;
}
