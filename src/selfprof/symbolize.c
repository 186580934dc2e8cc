/* SPDX-License-Identifier: Apache-2.0
 * Names code addresses of this process: a small ELF .symtab reader for the
 * executable (static functions included, no -rdynamic needed) and dladdr()
 * for shared libraries. Also Go's symbolz protocol on top of it, which
 * `go tool pprof http://.../debug/pprof/heap` uses to name addresses. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "selfprof/selfprof.h"
#include "core/vec.h"

struct exe_sym {
    uint64_t lo;   /* file virtual address */
    uint64_t size;
    const char *name; /* in the mmap'd executable, never unmapped */
};

/* Built once (pthread_once) and kept for the life of the process. */
static struct {
    bool ok;
    uintptr_t bias;      /* load bias of the executable (PIE) */
    uintptr_t lo, hi;    /* runtime range of its PT_LOAD segments */
    struct exe_sym *syms; /* malloc'd, sorted by lo */
    size_t n;
} g_exe;
static pthread_once_t g_exe_once = PTHREAD_ONCE_INIT;

static int exe_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    /* The first object reported is the main program. */
    g_exe.bias = (uintptr_t)info->dlpi_addr;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) {
            continue;
        }
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        if (s < lo) {
            lo = s;
        }
        if (s + ph->p_memsz > hi) {
            hi = s + ph->p_memsz;
        }
    }
    g_exe.lo = lo;
    g_exe.hi = hi;
    return 1; /* stop after the first */
}

static int sym_cmp(const void *a, const void *b)
{
    const struct exe_sym *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Reads the symbol table of the mapped ELF image @img (@len bytes). Every
 * offset is bounds-checked: the file is ours, but may be stripped or odd. */
static void read_symtab(const unsigned char *img, size_t len)
{
    if (len < sizeof(Elf64_Ehdr) || memcmp(img, ELFMAG, SELFMAG) != 0 ||
        img[EI_CLASS] != ELFCLASS64) {
        return;
    }
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    if (eh->e_shoff == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff > len || (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > len - eh->e_shoff) {
        return;
    }
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    const Elf64_Shdr *symtab = NULL;
    for (int pass = 0; pass < 2 && symtab == NULL; pass++) {
        uint32_t want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM; /* .symtab unless stripped */
        for (size_t i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type == want) {
                symtab = &sh[i];
                break;
            }
        }
    }
    if (symtab == NULL || symtab->sh_link >= eh->e_shnum || symtab->sh_entsize != sizeof(Elf64_Sym)) {
        return;
    }
    const Elf64_Shdr *strsh = &sh[symtab->sh_link];
    if (symtab->sh_offset > len || symtab->sh_size > len - symtab->sh_offset ||
        strsh->sh_offset > len || strsh->sh_size > len - strsh->sh_offset) {
        return;
    }
    const Elf64_Sym *syms = (const Elf64_Sym *)(img + symtab->sh_offset);
    size_t nsyms = symtab->sh_size / sizeof(Elf64_Sym);
    const char *strs = (const char *)(img + strsh->sh_offset);
    size_t strs_len = strsh->sh_size;

    struct exe_sym *out = malloc((nsyms ? nsyms : 1) * sizeof(*out));
    if (out == NULL) {
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < nsyms; i++) {
        unsigned type = ELF64_ST_TYPE(syms[i].st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || syms[i].st_shndx == SHN_UNDEF ||
            syms[i].st_value == 0 || syms[i].st_size == 0 || syms[i].st_name >= strs_len) {
            continue;
        }
        const char *name = strs + syms[i].st_name;
        if (memchr(name, '\0', strs_len - syms[i].st_name) == NULL || name[0] == '\0') {
            continue;
        }
        out[n++] = (struct exe_sym){syms[i].st_value, syms[i].st_size, name};
    }
    qsort(out, n, sizeof(*out), sym_cmp);
    g_exe.syms = out;
    g_exe.n = n;
}

static void exe_load(void)
{
    dl_iterate_phdr(exe_phdr_cb, NULL);
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    struct stat stb;
    if (fstat(fd, &stb) == 0 && stb.st_size > 0) {
        void *img = mmap(NULL, (size_t)stb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (img != MAP_FAILED) {
            read_symtab(img, (size_t)stb.st_size);
            if (g_exe.n == 0) {
                munmap(img, (size_t)stb.st_size);
            }
        }
    }
    close(fd);
    g_exe.ok = g_exe.n > 0;
}

static const char *exe_lookup(uintptr_t addr)
{
    uint64_t v = addr - g_exe.bias;
    size_t lo = 0, hi = g_exe.n;
    while (lo < hi) { /* first symbol with start > v */
        size_t mid = lo + (hi - lo) / 2;
        if (g_exe.syms[mid].lo <= v) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    /* Walk back over symbols starting at or before v (nested/aliased ones). */
    for (size_t i = lo; i > 0 && lo - i < 8; i--) {
        const struct exe_sym *s = &g_exe.syms[i - 1];
        if (v >= s->lo && v < s->lo + s->size) {
            return s->name;
        }
    }
    return NULL;
}

const char *pg_selfprof_symbolize(uintptr_t addr)
{
    pthread_once(&g_exe_once, exe_load);
    if (g_exe.ok && addr >= g_exe.lo && addr < g_exe.hi) {
        const char *name = exe_lookup(addr);
        if (name != NULL) {
            return name;
        }
    }
    Dl_info info;
    if (dladdr((void *)addr, &info) != 0 && info.dli_sname != NULL && info.dli_sname[0] != '\0') {
        return info.dli_sname;
    }
    return NULL;
}

/* ---- symbolz ----------------------------------------------------------------- */

struct strbuf {
    struct pg_arena *arena;
    char *p;
    size_t len, cap;
    bool oom;
};

static void sb_add(struct strbuf *b, const char *s, size_t n)
{
    if (b->oom) {
        return;
    }
    if (!PG_VEC_RESERVE(b->arena, b->p, b->cap, b->len + n + 1, 256, 0)) {
        b->oom = true;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* Parses one address token like Go's strconv.ParseUint(s, 0, 64) for the
 * forms pprof sends: 0x-hex, or decimal. False on anything else. */
static bool parse_addr(const char *s, size_t n, uint64_t *out)
{
    while (n > 0 && (s[0] == ' ' || s[0] == '\t' || s[0] == '\r' || s[0] == '\n')) {
        s++;
        n--;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) {
        n--;
    }
    unsigned base = 10;
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
        n -= 2;
    }
    if (n == 0 || n > 20) {
        return false;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d;
        char c = s[i];
        if (c >= '0' && c <= '9') {
            d = (unsigned)(c - '0');
        } else if (base == 16 && c >= 'a' && c <= 'f') {
            d = (unsigned)(c - 'a' + 10);
        } else if (base == 16 && c >= 'A' && c <= 'F') {
            d = (unsigned)(c - 'A' + 10);
        } else {
            return false;
        }
        if (v > (UINT64_MAX - d) / base) {
            return false;
        }
        v = v * base + d;
    }
    *out = v;
    return true;
}

enum pg_err pg_selfprof_symbolz_with(struct pg_arena *arena, const char *req, size_t len,
                                     pg_selfprof_resolver resolve, void *arg, char **out,
                                     size_t *out_len, struct pg_status *st)
{
    struct strbuf b = {arena, NULL, 0, 0, false};
    sb_add(&b, "num_symbols: 1\n", 15);
    size_t count = 0;
    size_t start = 0;
    while (req != NULL && start < len) {
        const char *plus = memchr(req + start, '+', len - start);
        size_t end = plus ? (size_t)(plus - req) : len;
        if (++count > PG_SELFPROF_SYMBOLZ_MAX) {
            return pg_status_set(st, PG_ERR_LIMIT, "symbol request holds more than %d addresses",
                                 PG_SELFPROF_SYMBOLZ_MAX);
        }
        uint64_t addr;
        if (parse_addr(req + start, end - start, &addr) && addr != 0) {
            const char *name = resolve((uintptr_t)addr, arg);
            if (name != NULL) {
                char head[32];
                int hn = snprintf(head, sizeof(head), "%#" PRIx64 " ", addr);
                sb_add(&b, head, (size_t)hn);
                sb_add(&b, name, strlen(name));
                sb_add(&b, "\n", 1);
            }
        }
        start = end + 1;
    }
    if (b.oom) {
        return pg_status_set(st, PG_ERR_NOMEM, "out of memory building the symbol reply");
    }
    *out = b.p;
    *out_len = b.len;
    return PG_ERR_OK;
}

static const char *default_resolver(uintptr_t addr, void *arg)
{
    (void)arg;
    return pg_selfprof_symbolize(addr);
}

enum pg_err pg_selfprof_symbolz(struct pg_arena *arena, const char *req, size_t len, char **out,
                                size_t *out_len, struct pg_status *st)
{
    return pg_selfprof_symbolz_with(arena, req, len, default_resolver, NULL, out, out_len, st);
}
