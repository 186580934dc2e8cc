/* SPDX-License-Identifier: Apache-2.0
 * Usable CPUs (see cpus.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "core/cpus.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads the first line of @path into @buf; false if unreadable. */
static int read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    int ok;

    if (f == NULL) {
        return 0;
    }
    ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    return ok;
}

static int cpus_ceil(long long quota, long long period)
{
    long long n;

    if (quota <= 0 || period <= 0) {
        return 0;
    }
    n = (quota + period - 1) / period;
    return n > 1 << 20 ? 1 << 20 : (int)n;
}

int pg_cpu_max_parse(const char *text)
{
    long long quota, period = 100000;
    char *end;

    if (text == NULL || strncmp(text, "max", 3) == 0) {
        return 0;
    }
    quota = strtoll(text, &end, 10);
    if (end == text) {
        return 0;
    }
    if (*end == ' ') {
        char *p = end + 1;

        period = strtoll(p, &end, 10);
        if (end == p) {
            return 0;
        }
    }
    return cpus_ceil(quota, period);
}

/* The tightest of @n and @limit (0 = none). */
static int tighter(int n, int limit)
{
    return limit > 0 && (n == 0 || limit < n) ? limit : n;
}

/* Walks from @rel (a cgroup path, "/a/b") up to the root of @root, reading
 * each level's limit with @one. */
static int walk_up(const char *root, const char *rel, int (*one)(const char *dir))
{
    char dir[4096];
    int n = 0;
    size_t len;

    if (snprintf(dir, sizeof(dir), "%s%s", root, rel) >= (int)sizeof(dir)) {
        return 0;
    }
    len = strlen(dir);
    while (len > 0 && dir[len - 1] == '/') {
        dir[--len] = '\0';
    }
    for (;;) {
        char *slash;

        n = tighter(n, one(dir));
        if (strlen(dir) <= strlen(root)) {
            break;
        }
        slash = strrchr(dir, '/');
        if (slash == NULL || (size_t)(slash - dir) < strlen(root)) {
            break;
        }
        *slash = '\0';
    }
    return n;
}

static int v2_one(const char *dir)
{
    char path[4200], line[128];

    snprintf(path, sizeof(path), "%s/cpu.max", dir);
    return read_line(path, line, sizeof(line)) ? pg_cpu_max_parse(line) : 0;
}

static int v1_one(const char *dir)
{
    char path[4200], line[64];
    long long quota, period;

    snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir);
    if (!read_line(path, line, sizeof(line))) {
        return 0;
    }
    quota = strtoll(line, NULL, 10);
    snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir);
    if (!read_line(path, line, sizeof(line))) {
        return 0;
    }
    period = strtoll(line, NULL, 10);
    return cpus_ceil(quota, period);
}

int pg_cgroup_cpu_quota(const char *self_cgroup, const char *v2_root, const char *v1_cpu_root)
{
    FILE *f = fopen(self_cgroup, "r");
    char line[4096], v2_rel[4096] = "", v1_rel[4096] = "";
    int have_v2 = 0, have_v1 = 0, n = 0;

    if (f == NULL) {
        return 0;
    }
    /* "0::/path" is the v2 hierarchy; "N:cpu,cpuacct:/path" the v1 cpu one. */
    while (fgets(line, sizeof(line), f) != NULL) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        char *nl = strchr(line, '\n');

        if (nl != NULL) {
            *nl = '\0';
        }
        if (c2 == NULL) {
            continue;
        }
        *c2 = '\0';
        if (strcmp(line, "0:") == 0 && c1 + 1 == c2) {
            snprintf(v2_rel, sizeof(v2_rel), "%s", c2 + 1);
            have_v2 = 1;
        } else {
            char *ctl = c1 + 1, *tok, *save = NULL;

            for (tok = strtok_r(ctl, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (strcmp(tok, "cpu") == 0) {
                    snprintf(v1_rel, sizeof(v1_rel), "%s", c2 + 1);
                    have_v1 = 1;
                }
            }
        }
    }
    fclose(f);
    if (have_v2) {
        n = walk_up(v2_root, v2_rel, v2_one);
    }
    if (n == 0 && have_v1) {
        /* Inside a container the v1 mount shows the container's own cgroup
         * as its root while /proc/self/cgroup still names the host path. */
        n = tighter(walk_up(v1_cpu_root, v1_rel, v1_one), v1_one(v1_cpu_root));
    }
    return n;
}

int pg_usable_cpus(void)
{
    cpu_set_t set;
    long n = -1;
    int quota;

    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        n = CPU_COUNT(&set);
    }
    if (n < 1) {
        n = sysconf(_SC_NPROCESSORS_ONLN);
    }
    if (n < 1) {
        n = 1;
    }
    quota = pg_cgroup_cpu_quota("/proc/self/cgroup", "/sys/fs/cgroup", "/sys/fs/cgroup/cpu");
    if (quota > 0 && quota < n) {
        n = quota;
    }
    return (int)n;
}
