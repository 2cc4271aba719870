// A measurement, not part of the package: can a start-up hook that does not use CUPTI bracket chosen
// kernel launches with cuProfilerStart/Stop, so that `ncu --profile-from-start off` profiles exactly
// those launches of an unchanged application (docs/ncu-behaviour.md, "Profiler brackets from a hook")?
//
// LD_PRELOAD'ed. It counts every kernel launch the process makes through the driver API
// (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel, also their per-thread-stream forms)
// and, for the 1-based ordinals in $BRACKET_PICK ("5,17,33"), calls cuProfilerStart before the launch
// and cuProfilerStop after it. The CUDA runtime reaches the driver through dlsym on libcuda's handle
// and cuGetProcAddress, which LD_PRELOAD alone does not interpose, so dlsym is interposed too.
// $BRACKET_LOG: a file that gets one line per launch: ordinal, symbol, grid, block.
//   gcc -O2 -shared -fPIC -o bracket_shim.so bracket_shim.c -ldl -lpthread
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef void *CUfunction;
typedef void *CUstream;
typedef struct {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  CUstream hStream;
  void *attrs;
  unsigned numAttrs;
} CUlaunchConfig;
typedef CUresult (*launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
typedef CUresult (*launch_ex_t)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*coop_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           CUstream, void **);
typedef CUresult (*gpa2_t)(const char *, void **, int, unsigned long long, int *);
typedef CUresult (*gpa_t)(const char *, void **, int, unsigned long long);
typedef CUresult (*plain_t)(void);
typedef CUresult (*name_t)(const char **, CUfunction);
typedef void *(*dlsym_t)(void *, const char *);

static dlsym_t real_dlsym;
static void *libcuda;
static plain_t profiler_start, profiler_stop;
static name_t func_name;
static unsigned long long counter;
static unsigned long long *picks;
static size_t npicks;
static FILE *log_file;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *driver(const char *name) {
  if (!libcuda) libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  return libcuda ? real_dlsym(libcuda, name) : NULL;
}

static void find_real_dlsym(void);
static void setup(void) {
  if (!real_dlsym) find_real_dlsym();
  profiler_start = (plain_t)driver("cuProfilerStart");
  profiler_stop = (plain_t)driver("cuProfilerStop");
  func_name = (name_t)driver("cuFuncGetName");
  const char *pick = getenv("BRACKET_PICK");
  if (pick && *pick) {
    npicks = 1;
    for (const char *c = pick; *c; c++) npicks += *c == ',';
    picks = calloc(npicks, sizeof *picks);
    char *copy = strdup(pick), *save = NULL;
    size_t n = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) picks[n++] = strtoull(tok, 0, 10);
    npicks = n;
    free(copy);
  }
  const char *path = getenv("BRACKET_LOG");
  if (path && *path) log_file = fopen(path, "w");
}

// The launch's ordinal, whether it is picked, and its log line: under the lock, so that ordinals
// follow the order in which threads enter the driver.
static int before(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz) {
  pthread_once(&once, setup);
  pthread_mutex_lock(&lock);
  unsigned long long n = ++counter;
  int picked = 0;
  for (size_t i = 0; i < npicks; i++) picked |= picks[i] == n;
  if (log_file) {
    const char *name = "?";
    if (func_name && f) func_name(&name, f);
    fprintf(log_file, "%llu %s (%u,%u,%u) (%u,%u,%u)\n", n, name, gx, gy, gz, bx, by, bz);
    fflush(log_file);
  }
  if (picked && profiler_start) profiler_start();
  return picked;
}

static void after(int picked) {
  if (picked && profiler_stop) profiler_stop();
  pthread_mutex_unlock(&lock);
}

#define LAUNCH(NAME)                                                                                          \
  static launch_t real_##NAME;                                                                                \
  static CUresult wrap_##NAME(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,  \
                              unsigned bz, unsigned smem, CUstream s, void **p, void **e) {                   \
    int picked = before(f, gx, gy, gz, bx, by, bz);                                                           \
    CUresult r = real_##NAME(f, gx, gy, gz, bx, by, bz, smem, s, p, e);                                       \
    after(picked);                                                                                            \
    return r;                                                                                                 \
  }
#define LAUNCH_EX(NAME)                                                                                       \
  static launch_ex_t real_##NAME;                                                                             \
  static CUresult wrap_##NAME(const CUlaunchConfig *c, CUfunction f, void **p, void **e) {                    \
    int picked = before(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ);  \
    CUresult r = real_##NAME(c, f, p, e);                                                                     \
    after(picked);                                                                                            \
    return r;                                                                                                 \
  }
#define COOP(NAME)                                                                                            \
  static coop_t real_##NAME;                                                                                  \
  static CUresult wrap_##NAME(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,  \
                              unsigned bz, unsigned smem, CUstream s, void **p) {                             \
    int picked = before(f, gx, gy, gz, bx, by, bz);                                                           \
    CUresult r = real_##NAME(f, gx, gy, gz, bx, by, bz, smem, s, p);                                          \
    after(picked);                                                                                            \
    return r;                                                                                                 \
  }
LAUNCH(cuLaunchKernel)
LAUNCH(cuLaunchKernel_ptsz)
LAUNCH_EX(cuLaunchKernelEx)
LAUNCH_EX(cuLaunchKernelEx_ptsz)
COOP(cuLaunchCooperativeKernel)
COOP(cuLaunchCooperativeKernel_ptsz)

// The wrapper for a driver symbol, given the real function; NULL when it is not a launch.
static void *wrapped(const char *name, void *real, int per_thread) {
  if (!real) return NULL;
#define PAIR(SYM)                                                                                             \
  if (!strcmp(name, #SYM)) {                                                                                  \
    if (per_thread) { real_##SYM##_ptsz = real; return (void *)wrap_##SYM##_ptsz; }                           \
    real_##SYM = real; return (void *)wrap_##SYM;                                                             \
  }
  PAIR(cuLaunchKernel)
  PAIR(cuLaunchKernelEx)
  PAIR(cuLaunchCooperativeKernel)
  if (!strcmp(name, "cuLaunchKernel_ptsz")) { real_cuLaunchKernel_ptsz = real; return (void *)wrap_cuLaunchKernel_ptsz; }
  if (!strcmp(name, "cuLaunchKernelEx_ptsz")) { real_cuLaunchKernelEx_ptsz = real; return (void *)wrap_cuLaunchKernelEx_ptsz; }
  if (!strcmp(name, "cuLaunchCooperativeKernel_ptsz")) {
    real_cuLaunchCooperativeKernel_ptsz = real; return (void *)wrap_cuLaunchCooperativeKernel_ptsz;
  }
  return NULL;
}

#define PER_THREAD 2ULL  // CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
static gpa2_t real_gpa2;
static gpa_t real_gpa;
static CUresult wrap_gpa2(const char *sym, void **pfn, int version, unsigned long long flags, int *status) {
  CUresult r = real_gpa2(sym, pfn, version, flags, status);
  void *w = (r == 0 && pfn) ? wrapped(sym, *pfn, (flags & PER_THREAD) != 0) : NULL;
  if (w) *pfn = w;
  return r;
}
static CUresult wrap_gpa(const char *sym, void **pfn, int version, unsigned long long flags) {
  CUresult r = real_gpa(sym, pfn, version, flags);
  void *w = (r == 0 && pfn) ? wrapped(sym, *pfn, (flags & PER_THREAD) != 0) : NULL;
  if (w) *pfn = w;
  return r;
}

static void find_real_dlsym(void) {
  real_dlsym = (dlsym_t)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!real_dlsym) real_dlsym = (dlsym_t)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
}

void *dlsym(void *handle, const char *name) {
  static pthread_once_t found = PTHREAD_ONCE_INIT;
  pthread_once(&found, find_real_dlsym);
  void *real = real_dlsym(handle, name);
  if (!real) return real;
  if (!strcmp(name, "cuGetProcAddress_v2")) { real_gpa2 = real; return (void *)wrap_gpa2; }
  if (!strcmp(name, "cuGetProcAddress")) { real_gpa = real; return (void *)wrap_gpa; }
  void *w = wrapped(name, real, 0);
  return w ? w : real;
}

// The runtime API, for a library that links libcudart dynamically (PyTorch's own kernels): the runtime
// reaches the driver through its private export table, not through cuLaunchKernel.
typedef struct { unsigned x, y, z; } dim3;
typedef struct { dim3 grid, block; size_t smem; void *stream; void *attrs; unsigned n; } cudaLaunchConfig_t;
typedef int (*rt_launch_t)(const void *, dim3, dim3, void **, size_t, void *);
typedef int (*rt_launch_ex_t)(const cudaLaunchConfig_t *, const void *, void **);
static rt_launch_t real_rt_launch;
static rt_launch_ex_t real_rt_launch_ex;
int cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **args, size_t smem, void *stream) {
  if (!real_rt_launch) { pthread_once(&once, setup); real_rt_launch = (rt_launch_t)real_dlsym(RTLD_NEXT, "cudaLaunchKernel"); }
  int picked = before(NULL, g.x, g.y, g.z, b.x, b.y, b.z);
  int r = real_rt_launch(f, g, b, args, smem, stream);
  after(picked);
  return r;
}
int cudaLaunchKernelExC(const cudaLaunchConfig_t *c, const void *f, void **args) {
  if (!real_rt_launch_ex) { pthread_once(&once, setup); real_rt_launch_ex = (rt_launch_ex_t)real_dlsym(RTLD_NEXT, "cudaLaunchKernelExC"); }
  int picked = before(NULL, c->grid.x, c->grid.y, c->grid.z, c->block.x, c->block.y, c->block.z);
  int r = real_rt_launch_ex(c, f, args);
  after(picked);
  return r;
}

// Direct callers linked against libcuda (a Triton launcher, a CUDA C++ program using the driver API).
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, CUstream s, void **p, void **e) {
  if (!real_cuLaunchKernel) { pthread_once(&once, setup); real_cuLaunchKernel = (launch_t)driver("cuLaunchKernel"); }
  return wrap_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, p, e);
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **p, void **e) {
  if (!real_cuLaunchKernelEx) { pthread_once(&once, setup); real_cuLaunchKernelEx = (launch_ex_t)driver("cuLaunchKernelEx"); }
  return wrap_cuLaunchKernelEx(c, f, p, e);
}
