/* The buffers compiled code allocates for its intermediate values
 * (memref.alloc and dealloc, lowered with finalize-memref-to-llvm's
 * use-generic-functions to the three functions below).
 *
 * A large buffer, once freed, is kept and handed out again for the next
 * request of the same rounded size. An entry allocates the same sizes in the
 * same order on every call, and a layer's loop body on every layer; without
 * this each large buffer was fresh pages from the kernel, zeroed on first
 * touch (a tenth of a SmolLM2 training step). What is kept is bounded by
 * the most the code has ever held live at once, and at least
 * LINNET_BUFFER_CACHE_MB (default 1024) megabytes: a gradient's saved tape,
 * whose stacks are gigabytes, keeps them between steps, while a run whose
 * shapes change every call (rows packed to different lengths) keeps at most
 * one working set of blocks it may never ask for again. When a freed block
 * does not fit, the blocks kept longest go back to malloc first. Setting
 * LINNET_BUFFER_CACHE_MB makes it the bound (0 keeps nothing). Buffers
 * under KEEP_MIN bytes go straight to malloc, whose own free lists serve
 * them. What is kept goes back to malloc when model.so is unloaded (a
 * destructor), so a process that loads and drops models does not lose it. */
#include <stdint.h>
#include <stdlib.h>

#define KEEP_MIN ((size_t)256 * 1024)
#define KEEP_SLOTS 1024
#define PAGE ((size_t)4096)

/* Each block starts with a header of `offset` bytes (a multiple of the
 * alignment asked for, at least 64); its last two words record the block's
 * rounded size and that offset, so that free needs only the pointer. */
typedef struct {
  size_t size;   /* bytes after the header, rounded */
  size_t offset; /* header bytes */
} header_words;

typedef struct {
  size_t size, offset;
  void* base;
  uint64_t freed; /* when it was kept: the oldest goes first */
} kept_block;

static kept_block kept[KEEP_SLOTS];
static int kept_count;
static size_t kept_bytes, kept_limit = (size_t)-1, live_bytes, live_peak;
static int limit_fixed; /* LINNET_BUFFER_CACHE_MB was set */
static uint64_t clock_ticks;
static int lock_word;

static void take_lock(void) {
  while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&lock_word, __ATOMIC_RELAXED)) {
    }
}
static void drop_lock(void) { __atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE); }

/* Under the lock. */
static size_t limit(void) {
  if (kept_limit == (size_t)-1) {
    const char* mb = getenv("LINNET_BUFFER_CACHE_MB");
    limit_fixed = mb && *mb;
    kept_limit = (size_t)(limit_fixed ? strtoull(mb, NULL, 10) : 1024) << 20;
  }
  return limit_fixed || live_peak < kept_limit ? kept_limit : live_peak;
}

/* Under the lock: a large block handed out. */
static void count_live(size_t size) {
  live_bytes += size;
  if (live_bytes > live_peak) live_peak = live_bytes;
}

/* Under the lock: frees the block kept longest. */
static void drop_oldest(void) {
  int oldest = 0;
  for (int k = 1; k < kept_count; ++k)
    if (kept[k].freed < kept[oldest].freed) oldest = k;
  free(kept[oldest].base);
  kept_bytes -= kept[oldest].size;
  kept[oldest] = kept[--kept_count];
}

static void* user_pointer(void* base, size_t size, size_t offset) {
  char* p = (char*)base + offset;
  header_words* h = (header_words*)p - 1;
  h->size = size;
  h->offset = offset;
  return p;
}

static void* allocate(size_t alignment, size_t bytes) {
  const size_t offset = alignment > 64 ? (alignment + 15) / 16 * 16 : 64;
  const size_t size = bytes >= KEEP_MIN ? (bytes + PAGE - 1) / PAGE * PAGE : bytes;
  if (size >= KEEP_MIN) {
    take_lock();
    for (int k = kept_count - 1; k >= 0; --k) {
      if (kept[k].size != size || kept[k].offset != offset) continue;
      void* base = kept[k].base;
      kept[k] = kept[--kept_count];
      kept_bytes -= size;
      count_live(size);
      drop_lock();
      return user_pointer(base, size, offset);
    }
    drop_lock();
  }
  const size_t align = alignment > 64 ? offset : 64;
  void* base = aligned_alloc(align, (offset + size + align - 1) / align * align);
  if (!base) return NULL;
  if (size >= KEEP_MIN) {
    take_lock();
    count_live(size);
    drop_lock();
  }
  return user_pointer(base, size, offset);
}

void* _mlir_memref_to_llvm_alloc(size_t bytes) { return allocate(64, bytes); }

void* _mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes) { return allocate(alignment, bytes); }

void _mlir_memref_to_llvm_free(void* p) {
  if (!p) return;
  const header_words* h = (const header_words*)p - 1;
  const size_t size = h->size, offset = h->offset;
  void* base = (char*)p - offset;
  if (size >= KEEP_MIN) {
    take_lock();
    live_bytes -= size;
    const size_t bound = limit();
    if (size <= bound) {
      while (kept_count > 0 && (kept_count == KEEP_SLOTS || kept_bytes + size > bound)) drop_oldest();
      kept[kept_count++] = (kept_block){size, offset, base, ++clock_ticks};
      kept_bytes += size;
      drop_lock();
      return;
    }
    drop_lock();
  }
  free(base);
}

/* dlclose of model.so: nothing kept outlives the list that holds it. */
__attribute__((destructor)) static void release_kept(void) {
  take_lock();
  for (int k = 0; k < kept_count; ++k) free(kept[k].base);
  kept_count = 0;
  kept_bytes = 0;
  drop_lock();
}
