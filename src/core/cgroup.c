/* SPDX-License-Identifier: Apache-2.0
 * Usable CPUs and cgroup limits (see cgroup.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "core/cgroup.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads the first line of @dir/@name into @buf; false if unreadable. */
static int read_line(const char *dir, const char *name, char *buf, size_t size)
{
    char path[4200];
    FILE *f;
    int ok;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    return ok;
}

static uint64_t cpus_ceil(long long quota, long long period)
{
    if (quota <= 0 || period <= 0) {
        return 0;
    }
    return (uint64_t)((quota + period - 1) / period);
}

int pg_cpu_max_parse(const char *text)
{
    long long quota, period = 100000;
    uint64_t n;
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
    n = cpus_ceil(quota, period);
    return n > 1u << 20 ? 1 << 20 : (int)n;
}

/* One cgroup directory's limit; 0 = none there. */
typedef uint64_t (*limit_fn)(const char *dir);

static uint64_t tighter(uint64_t n, uint64_t limit)
{
    return limit > 0 && (n == 0 || limit < n) ? limit : n;
}

/* From @root@rel (a cgroup path, "/a/b") up to @root itself. */
static uint64_t walk_up(const char *root, const char *rel, limit_fn one)
{
    char dir[4096];
    size_t len, root_len = strlen(root);
    uint64_t n = 0;

    if (snprintf(dir, sizeof(dir), "%s%s", root, rel) >= (int)sizeof(dir)) {
        return 0;
    }
    len = strlen(dir);
    while (len > root_len && dir[len - 1] == '/') {
        dir[--len] = '\0';
    }
    for (;;) {
        char *slash;

        n = tighter(n, one(dir));
        slash = strrchr(dir, '/');
        if (strlen(dir) <= root_len || slash == NULL || (size_t)(slash - dir) < root_len) {
            break;
        }
        *slash = '\0';
    }
    return n;
}

/* Finds the v2 path ("0::/path") and the v1 path of @controller
 * ("N:cpu,cpuacct:/path") in a /proc/self/cgroup file. */
static void self_paths(const char *self_cgroup, const char *controller, char *v2, char *v1,
                       size_t size)
{
    FILE *f = fopen(self_cgroup, "r");
    char line[4096];

    v2[0] = v1[0] = '\0';
    if (f == NULL) {
        return;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        char *nl = strchr(line, '\n'), *tok, *save = NULL;

        if (nl != NULL) {
            *nl = '\0';
        }
        if (c2 == NULL || c2[1] != '/') {
            continue;
        }
        *c2 = '\0';
        if (c1 + 1 == c2) {
            snprintf(v2, size, "%s", c2 + 1);
            continue;
        }
        for (tok = strtok_r(c1 + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            if (strcmp(tok, controller) == 0) {
                snprintf(v1, size, "%s", c2 + 1);
            }
        }
    }
    fclose(f);
}

static uint64_t limit(const char *self_cgroup, const char *controller, const char *v2_root,
                      limit_fn v2_one, const char *v1_root, limit_fn v1_one)
{
    char v2[4096], v1[4096];
    uint64_t n = 0;

    self_paths(self_cgroup, controller, v2, v1, sizeof(v2));
    if (v2[0] != '\0') {
        n = walk_up(v2_root, v2, v2_one);
    }
    if (n == 0 && v1[0] != '\0') {
        /* Inside a container the v1 mount shows the container's own cgroup
         * as its root while /proc/self/cgroup still names the host's path. */
        n = tighter(walk_up(v1_root, v1, v1_one), v1_one(v1_root));
    }
    return n;
}

static uint64_t cpu_v2(const char *dir)
{
    char line[128];

    return read_line(dir, "cpu.max", line, sizeof(line)) ? (uint64_t)pg_cpu_max_parse(line) : 0;
}

static uint64_t cpu_v1(const char *dir)
{
    char q[64], p[64];

    if (!read_line(dir, "cpu.cfs_quota_us", q, sizeof(q)) ||
        !read_line(dir, "cpu.cfs_period_us", p, sizeof(p))) {
        return 0;
    }
    return cpus_ceil(strtoll(q, NULL, 10), strtoll(p, NULL, 10));
}

/* "max" or bytes; v1 reports "unlimited" as a huge number, which the
 * caller compares with the machine's memory. */
static uint64_t mem_file(const char *dir, const char *name)
{
    char line[64];

    if (!read_line(dir, name, line, sizeof(line)) || strncmp(line, "max", 3) == 0) {
        return 0;
    }
    return strtoull(line, NULL, 10);
}

static uint64_t mem_v2(const char *dir)
{
    return mem_file(dir, "memory.max");
}

static uint64_t mem_v1(const char *dir)
{
    return mem_file(dir, "memory.limit_in_bytes");
}

int pg_cgroup_cpu_quota(const char *self_cgroup, const char *v2_root, const char *v1_root)
{
    uint64_t n = limit(self_cgroup, "cpu", v2_root, cpu_v2, v1_root, cpu_v1);

    return n > 1u << 20 ? 1 << 20 : (int)n;
}

uint64_t pg_cgroup_memory_limit(const char *self_cgroup, const char *v2_root,
                                const char *v1_root)
{
    return limit(self_cgroup, "memory", v2_root, mem_v2, v1_root, mem_v1);
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
