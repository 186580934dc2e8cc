/* Keeps pg_selfprof non-empty before the heap sampler lands. */
typedef int pg_selfprof_keep_;
