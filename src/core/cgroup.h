/* SPDX-License-Identifier: Apache-2.0
 * Resource limits as the kernel enforces them on this process: its CPU
 * affinity and the cgroup CPU quota and memory limit of its cgroup and every
 * ancestor. So a sidecar on a 64-core node with `limits.cpu: 500m` starts one
 * worker, not 64, and memory percentages are of the container's limit. */
#ifndef PG_CORE_CGROUP_H
#define PG_CORE_CGROUP_H

#include <stdint.h>

/* CPUs this process can use: the affinity mask (taskset, cpuset) lowered to
 * the cgroup CPU quota rounded up, as Go 1.25 sizes GOMAXPROCS. At least 1. */
int pg_usable_cpus(void);

/* The tightest limit over the cgroup this process is in and its ancestors:
 * cgroup v2 files under @v2_root, else the v1 controller's files under
 * @v1_root. @self_cgroup is a /proc/self/cgroup file. 0 = no limit or
 * nothing readable. Paths are parameters so tests can use a fake tree. */
int pg_cgroup_cpu_quota(const char *self_cgroup, const char *v2_root, const char *v1_root);
uint64_t pg_cgroup_memory_limit(const char *self_cgroup, const char *v2_root,
                                const char *v1_root);

/* One cgroup v2 `cpu.max` text ("max 100000", "150000 100000"): CPUs
 * rounded up, 0 for no limit or text that does not parse. */
int pg_cpu_max_parse(const char *text);

#endif
