/* SPDX-License-Identifier: Apache-2.0
 * What giving a large buffer back costs, and what writing it again costs after: for a
 * 32 MiB anonymous mapping written whole 20 times, released between rounds by nothing
 * (kept), MADV_FREE, MADV_DONTNEED or munmap (+ a fresh mmap), with 4 KiB pages and with
 * MADV_HUGEPAGE: process CPU per write and per release, minor faults per round, and RSS
 * left after a release. The figures behind core/bufpool's choices (bench/README.md
 * "large"). Not built by CMake: cc -O2 -o /tmp/release_modes bench/release_modes.c */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#define LEN ((size_t)32 << 20)
#define HUGE ((size_t)2 << 20)
#define ROUNDS 20

static double cpu_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static long minflt(void)
{
    struct rusage r;

    getrusage(RUSAGE_SELF, &r);
    return r.ru_minflt;
}

static long rss_kib(void)
{
    long size = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &size, &res) != 2) {
            res = 0;
        }
        fclose(f);
    }
    return res * 4;
}

/* A 2 MiB-aligned LEN bytes inside a mapping of LEN + HUGE (so THP can back all of it). */
static char *map_region(char **base, int thp)
{
    char *p = mmap(NULL, LEN + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        return NULL;
    }
    *base = p;
    p = (char *)(((unsigned long)p + HUGE - 1) & ~(unsigned long)(HUGE - 1));
    if (thp) {
        madvise(p, LEN, MADV_HUGEPAGE);
    }
    return p;
}

int main(void)
{
    static const char *modes[] = {"keep", "MADV_FREE", "MADV_DONTNEED", "munmap"};

    for (int thp = 0; thp < 2; thp++) {
        for (int m = 0; m < 4; m++) {
            double write_ms = 0, rel_ms = 0;
            long faults = 0, r0 = rss_kib(), left = 0;
            char *base = NULL, *p = NULL;

            for (int i = 0; i < ROUNDS; i++) {
                long f0;
                double t0, t1;

                if (p == NULL && (p = map_region(&base, thp)) == NULL) {
                    perror("mmap");
                    return 1;
                }
                f0 = minflt();
                t0 = cpu_ms();
                memset(p, i, LEN);
                t1 = cpu_ms();
                faults += minflt() - f0;
                write_ms += t1 - t0;
                if (m == 1) {
                    madvise(p, LEN, MADV_FREE);
                } else if (m == 2) {
                    madvise(p, LEN, MADV_DONTNEED);
                } else if (m == 3) {
                    munmap(base, LEN + HUGE);
                    p = NULL;
                }
                rel_ms += cpu_ms() - t1;
                left = rss_kib() - r0;
            }
            if (p != NULL) {
                munmap(base, LEN + HUGE);
            }
            printf("%-4s %-14s write %6.2f ms, release %5.2f ms, faults %5ld per round; "
                   "RSS after a release +%ld KiB\n",
                   thp ? "THP" : "4K", modes[m], write_ms / ROUNDS, rel_ms / ROUNDS,
                   faults / ROUNDS, left);
        }
    }
    return 0;
}
