/* SPDX-License-Identifier: Apache-2.0
 * cgroup limits: cpu.max parsing, the CPU quota and memory limit of the
 * process's cgroup and its ancestors (v2), the v1 files (also when a
 * container's mount shows its own cgroup as the root), on fake trees under
 * /tmp; and usable CPUs. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cgroup.h"
#include "pg_test.h"

PG_TEST(test_cpu_max_parse)
{
    static const struct {
        const char *text;
        int want;
    } cases[] = {
        {"max 100000\n", 0},      {"max", 0},
        {"100000 100000\n", 1},   {"150000 100000\n", 2}, /* 1.5 CPUs: rounded up */
        {"50000 100000\n", 1},    {"200000 100000", 2},
        {"400000 200000\n", 2},   {"1000 100000\n", 1},   /* 1% of a CPU still gets one */
        {"250000\n", 3},          /* period omitted: the kernel's 100000 */
        {"", 0},                  {"junk 100000", 0},
        {"-1 100000", 0},         {"100000 0", 0},
        {"100000 junk", 0},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = pg_cpu_max_parse(cases[i].text);

        if (got != cases[i].want) {
            fprintf(stderr, "  cpu.max \"%s\"\n", cases[i].text);
        }
        CHECK_INT(got, cases[i].want);
    }
    CHECK_INT(pg_cpu_max_parse(NULL), 0);
}

static char g_root[256];

static void put(const char *rel, const char *text)
{
    char path[512], dir[512];

    snprintf(path, sizeof(path), "%s/%s", g_root, rel);
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *p = dir + strlen(g_root) + 1; *p; p++) { /* mkdir -p of the parent */
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0700);
            *p = '/';
        }
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
}

/* The fake tree's /proc/self/cgroup, v2 root and v1 controller root (@v1). */
struct fake_paths {
    char self[512], v2[512], v1[512];
};

static struct fake_paths paths(const char *v1)
{
    struct fake_paths p;

    snprintf(p.self, sizeof(p.self), "%s/self_cgroup", g_root);
    snprintf(p.v2, sizeof(p.v2), "%s/v2", g_root);
    snprintf(p.v1, sizeof(p.v1), "%s/%s", g_root, v1);
    return p;
}

static int quota(void)
{
    struct fake_paths p = paths("v1cpu");

    return pg_cgroup_cpu_quota(p.self, p.v2, p.v1);
}

static uint64_t memory(void)
{
    struct fake_paths p = paths("v1mem");

    return pg_cgroup_memory_limit(p.self, p.v2, p.v1);
}

static void fresh_root(const char *name)
{
    char cmd[400];

    snprintf(g_root, sizeof(g_root), "/tmp/pg-cpus-%d-%s", (int)getpid(), name);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_root);
    (void)!system(cmd);
    mkdir(g_root, 0700);
}

static void drop_root(void)
{
    char cmd[400];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_root);
    (void)!system(cmd);
}

PG_TEST(test_cgroup_v2_tightest_ancestor)
{
    fresh_root("v2");
    put("self_cgroup", "0::/kubepods/pod1/ctr\n");
    put("v2/kubepods/pod1/ctr/cpu.max", "max 100000\n"); /* the leaf is unlimited... */
    put("v2/kubepods/pod1/cpu.max", "250000 100000\n");  /* ...but the pod has 2.5 CPUs */
    put("v2/kubepods/cpu.max", "800000 100000\n");
    CHECK_INT(quota(), 3);
    put("v2/kubepods/pod1/ctr/cpu.max", "50000 100000\n"); /* now the leaf is tighter */
    CHECK_INT(quota(), 1);
    drop_root();
}

PG_TEST(test_cgroup_v2_namespace_root)
{
    fresh_root("ns");
    put("self_cgroup", "0::/\n"); /* cgroupns: the container's cgroup is the root */
    put("v2/cpu.max", "200000 100000\n");
    CHECK_INT(quota(), 2);
    put("v2/cpu.max", "max 100000\n");
    CHECK_INT(quota(), 0);
    drop_root();
}

PG_TEST(test_cgroup_v1)
{
    fresh_root("v1");
    /* Hybrid host: a v2 line with no cpu.max, then the v1 cpu controller. */
    put("self_cgroup", "4:memory:/x\n2:cpu,cpuacct:/docker/abc\n0::/\n");
    put("v1cpu/docker/abc/cpu.cfs_quota_us", "150000\n");
    put("v1cpu/docker/abc/cpu.cfs_period_us", "100000\n");
    CHECK_INT(quota(), 2);
    put("v1cpu/docker/abc/cpu.cfs_quota_us", "-1\n"); /* unlimited */
    CHECK_INT(quota(), 0);
    drop_root();

    /* Inside a container the mount shows the container's cgroup as the root
     * while /proc/self/cgroup names the host's path. */
    fresh_root("v1ctr");
    put("self_cgroup", "2:cpu,cpuacct:/docker/abc\n");
    put("v1cpu/cpu.cfs_quota_us", "300000\n");
    put("v1cpu/cpu.cfs_period_us", "100000\n");
    CHECK_INT(quota(), 3);
    drop_root();
}

PG_TEST(test_memory_limit)
{
    fresh_root("mem2");
    put("self_cgroup", "0::/system.slice/pprofgate.service\n"); /* a systemd unit, no cgroupns */
    put("v2/system.slice/pprofgate.service/memory.max", "max\n");
    put("v2/system.slice/memory.max", "536870912\n"); /* the slice's MemoryMax= */
    CHECK_INT(memory(), 536870912);
    put("v2/system.slice/pprofgate.service/memory.max", "268435456\n");
    CHECK_INT(memory(), 268435456);
    drop_root();

    fresh_root("mem1");
    put("self_cgroup", "4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n0::/\n");
    put("v1mem/memory.limit_in_bytes", "1073741824\n"); /* the container's own mount root */
    CHECK_INT(memory(), 1073741824);
    CHECK_INT(quota(), 0); /* no cpu files: no CPU quota */
    drop_root();
}

PG_TEST(test_unreadable_is_no_limit)
{
    fresh_root("none");
    CHECK_INT(quota(), 0); /* no self_cgroup file */
    CHECK_INT(memory(), 0);
    put("self_cgroup", "garbage\n\n1:cpu\n");
    CHECK_INT(quota(), 0);
    drop_root();
    CHECK(pg_usable_cpus() >= 1);
}

PG_TEST_MAIN(PG_CASE(test_cpu_max_parse), PG_CASE(test_cgroup_v2_tightest_ancestor),
             PG_CASE(test_cgroup_v2_namespace_root), PG_CASE(test_cgroup_v1),
             PG_CASE(test_memory_limit), PG_CASE(test_unreadable_is_no_limit))
