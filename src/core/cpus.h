/* SPDX-License-Identifier: Apache-2.0
 * How many CPUs this process can actually use: its affinity mask (taskset,
 * cpuset), lowered by a cgroup CPU quota (a container's `limits.cpu`), so a
 * sidecar on a 64-core node with a 500m limit does not start 64 threads. */
#ifndef PG_CORE_CPUS_H
#define PG_CORE_CPUS_H

/* At least 1. */
int pg_usable_cpus(void);

/* The CPU quota, in whole CPUs rounded up, of the cgroup this process is in
 * and of every ancestor (the tightest wins; the kernel enforces them all):
 * cgroup v2 `cpu.max` under @v2_root, else v1 `cpu.cfs_quota_us` /
 * `cpu.cfs_period_us` under @v1_cpu_root. @self_cgroup is a
 * /proc/self/cgroup file. 0 when there is no quota or nothing readable.
 * Parameters so tests can point it at a fake tree. */
int pg_cgroup_cpu_quota(const char *self_cgroup, const char *v2_root, const char *v1_cpu_root);

/* One cgroup v2 `cpu.max` text ("max 100000", "150000 100000"): CPUs
 * rounded up, 0 for no limit or text that does not parse. */
int pg_cpu_max_parse(const char *text);

#endif
