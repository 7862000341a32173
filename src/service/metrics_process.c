/* metrics_process.c — the standard process_* metrics of this process, read from /proc and
 * getrusage at every scrape (the names Prometheus' own client libraries use, so dashboards
 * made for them work), and tide_uptime_seconds. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "service/metrics_internal.h"
#include "tide/status.h"

static double now_epoch(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The process' start in seconds since the epoch: the boot time of /proc/stat plus the start
 * tick of /proc/self/stat (field 22, counted after the ")" closing the command name, which
 * may itself hold spaces and parentheses). NAN when /proc cannot say. */
static double proc_start_time(void) {
    double btime = NAN, ticks = NAN;
    FILE *fp = fopen("/proc/stat", "r");
    if (fp) {
        char line[256];
        while (fgets(line, sizeof line, fp))
            if (strncmp(line, "btime ", 6) == 0) {
                btime = strtod(line + 6, NULL);
                break;
            }
        fclose(fp);
    }
    fp = fopen("/proc/self/stat", "r");
    if (fp) {
        char buf[1024];
        size_t n = fread(buf, 1, sizeof buf - 1, fp);
        buf[n] = 0;
        fclose(fp);
        char *p = strrchr(buf, ')');
        /* After ")": field 3 (state) onwards; starttime is field 22. */
        for (int field = 2; p && field < 22; field++)
            p = strchr(p + 1, ' ');
        if (p)
            ticks = strtod(p + 1, NULL);
    }
    long hz = sysconf(_SC_CLK_TCK);
    if (isnan(btime) || isnan(ticks) || hz <= 0)
        return NAN;
    return btime + ticks / (double)hz;
}

int metrics_process_init(tide_metrics *m) {
    metrics_process *p = &m->proc;
    struct {
        metric_type type;
        const char *name, *help;
        tide_metric **f;
    } fams[] = {
        {METRIC_GAUGE, "process_resident_memory_bytes", "Resident memory size in bytes.", &p->rss},
        {METRIC_GAUGE, "process_virtual_memory_bytes", "Virtual memory size in bytes.", &p->vsize},
        {METRIC_GAUGE, "process_open_fds", "Number of open file descriptors.", &p->fds},
        {METRIC_GAUGE, "process_max_fds", "Maximum number of open file descriptors.", &p->max_fds},
        {METRIC_COUNTER, "process_cpu_seconds_total",
         "Total user and system CPU time spent in "
         "seconds.",
         &p->cpu},
        {METRIC_GAUGE, "process_start_time_seconds",
         "Start time of the process since unix epoch in seconds.", &p->start},
        {METRIC_GAUGE, "tide_uptime_seconds", "Seconds since the process started.", &p->uptime},
    };
    for (size_t k = 0; k < sizeof fams / sizeof fams[0]; k++) {
        int st = metrics_family_add(m, fams[k].type, fams[k].name, fams[k].help, NULL, NULL, 0,
                                    NULL, 0, 1, fams[k].f);
        if (st)
            return st;
    }
    p->start_time = proc_start_time();
    if (isnan(p->start_time))
        p->start_time = now_epoch(); /* no /proc: the registry's birth is the best guess */
    return 0;
}

static int count_open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

/* The values are set without the registry's lock held between them: each is one sample. */
static void set_value(tide_metric *f, double v) {
    pthread_mutex_lock(&f->reg->lock);
    f->series[0].value = v;
    pthread_mutex_unlock(&f->reg->lock);
}

void metrics_process_update(tide_metrics *m) {
    metrics_process *p = &m->proc;
    long page = sysconf(_SC_PAGESIZE);
    FILE *fp = fopen("/proc/self/statm", "r");
    if (fp) {
        unsigned long long size = 0, resident = 0;
        if (fscanf(fp, "%llu %llu", &size, &resident) == 2 && page > 0) {
            set_value(p->vsize, (double)size * (double)page);
            set_value(p->rss, (double)resident * (double)page);
        }
        fclose(fp);
    }
    int fds = count_open_fds();
    if (fds >= 0)
        set_value(p->fds, fds);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        set_value(p->max_fds, rl.rlim_cur == RLIM_INFINITY ? INFINITY : (double)rl.rlim_cur);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        set_value(p->cpu, (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                              (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec);
    set_value(p->start, p->start_time);
    double up = now_epoch() - p->start_time;
    set_value(p->uptime, up > 0 ? up : 0);
}
