// CUDA C++ peers of `examples/device_bench.rs`: the same algorithms (one thread per element for
// add-list, and four as our add_wide, and end to end through page-locked host buffers as our
// add-pinned; one per pixel for smooth, also in strips of rows and of words of four pixels; one
// thread per row with a shared-memory block reduction for integrate2d, the 16 x 16 shared-memory
// tiling for matmul, the sample-pivot quicksort), on the same inputs, with the same check values
// and JSON lines as the other peers (see gpu_numba.py).
//
//     nvcc -O3 -arch=native -o peers_cuda benches/peers/cuda/peers.cu && ./peers_cuda [reps]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                      \
            std::fprintf(stderr, "peers_cuda: %s: %s\n", #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

constexpr int TPB = 16;
constexpr int INTEGRATE_TPB = 256;

__global__ void add_kernel(const float* a, const float* b, float* c, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// Four elements per thread, gridsize apart (our add_wide).
__global__ void add_wide_kernel(const float* a, const float* b, float* c, size_t n) {
    size_t s = gridDim.x * (size_t)blockDim.x, i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i + 3 * s < n) {
        float a0 = a[i], a1 = a[i + s], a2 = a[i + 2 * s], a3 = a[i + 3 * s];
        float b0 = b[i], b1 = b[i + s], b2 = b[i + 2 * s], b3 = b[i + 3 * s];
        c[i] = a0 + b0;
        c[i + s] = a1 + b1;
        c[i + 2 * s] = a2 + b2;
        c[i + 3 * s] = a3 + b3;
        i += 4 * s;
    }
    for (; i < n; i += s) c[i] = a[i] + b[i];
}

__global__ void smooth_kernel(const int8_t* x, int8_t* out, size_t n, size_t m) {
    size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t i = blockIdx.y * (size_t)blockDim.y + threadIdx.y;
    if (1 <= i && i + 1 < n && 1 <= j && j + 1 < m) {
        int s = 0;
        for (int di = -1; di <= 1; ++di)
            for (int dj = -1; dj <= 1; ++dj) s += x[(i + di) * m + (j + dj)];
        // Floor division, as the Rust kernel's div_euclid(9) and Python's //.
        int q = s / 9;
        if (s % 9 != 0 && s < 0) q -= 1;
        out[i * m + j] = (int8_t)q;
    }
}

constexpr int STRIP_ROWS = 8;
constexpr int STRIP_THREADS = 128;

// smooth with each thread down one column of a strip of STRIP_ROWS rows: each row's three bytes
// summed once for the three pixels that use them, a whole strip's loads issued at once.
__global__ void smooth_strips_kernel(const int8_t* x, int8_t* out, size_t n, size_t m) {
    size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t first = 1 + (blockIdx.y * (size_t)blockDim.y + threadIdx.y) * STRIP_ROWS;
    if (j < 1 || j + 1 >= m || first + 1 >= n) return;
    auto row = [&](size_t i) {
        const int8_t* r = x + i * m + j;
        return (int)r[-1] + (int)r[0] + (int)r[1];
    };
    // Floor division by 9: s + 9 * 128 is never negative.
    auto mean = [](int s) { return (int8_t)((int)((unsigned)(s + 9 * 128) / 9u) - 128); };
    if (first + STRIP_ROWS < n) {
        int sums[STRIP_ROWS + 2];
#pragma unroll
        for (int k = 0; k < STRIP_ROWS + 2; ++k) sums[k] = row(first - 1 + k);
#pragma unroll
        for (int k = 0; k < STRIP_ROWS; ++k)
            out[(first + k) * m + j] = mean(sums[k] + sums[k + 1] + sums[k + 2]);
    } else {
        int above = row(first - 1), here = row(first);
        for (size_t i = first; i + 1 < n; ++i) {
            int below = row(i + 1);
            out[i * m + j] = mean(above + here + below);
            above = here;
            here = below;
        }
    }
}

constexpr int WORD_THREADS = 128;

// One row's nine-pixel sums for the four pixels of word c, with its neighbour words l and r:
// bytes biased by 128 (unsigned), pixels 0 and 2 in the 16-bit lanes of *even, 1 and 3 of *odd.
__device__ __forceinline__ void row_lanes(uint32_t l, uint32_t c, uint32_t r, uint32_t* even,
                                          uint32_t* odd) {
    const uint32_t lanes = 0x00FF00FFu, bias = 0x80808080u;
    l ^= bias; c ^= bias; r ^= bias;
    uint32_t middle = (c & lanes) + ((c >> 8) & lanes);
    *even = middle + (__funnelshift_l(l, c, 8) & lanes);   // + (l3, c1)
    *odd = middle + (__funnelshift_r(c, r, 16) & lanes);   // + (c2, r0)
}

// floor(s / 9) - 128 as a byte, for a biased sum s <= 9 * 255.
__device__ __forceinline__ uint32_t lane_mean(uint32_t s) { return ((s * 7282u) >> 16) ^ 0x80u; }

// smooth_strips over the image as 32-bit words of four pixels (m a multiple of 4): each thread
// takes one word column of a strip, three word loads per row, sums in 16-bit lanes. The words at
// the image's sides (SIDE) keep their border byte; the others need no test for it.
template <bool SIDE>
__device__ __forceinline__ void words_strip(const uint32_t* x, uint32_t* out, size_t n, size_t w,
                                            size_t j, size_t first) {
    size_t left = SIDE && j == 0 ? j : j - 1, right = SIDE && j + 1 == w ? j : j + 1;
    uint32_t keep = SIDE ? (j == 0 ? 0xFFu : 0u) | (j + 1 == w ? 0xFF000000u : 0u) : 0u;
    auto word = [&](size_t i, uint32_t* even, uint32_t* odd) {
        const uint32_t* r = x + i * w;
        row_lanes(r[left], r[j], r[right], even, odd);
    };
    auto put = [&](size_t i, uint32_t even, uint32_t odd) {
        uint32_t p = lane_mean(even & 0xFFFF) | lane_mean(odd & 0xFFFF) << 8 |
                     lane_mean(even >> 16) << 16 | lane_mean(odd >> 16) << 24;
        uint32_t* o = out + i * w + j;
        *o = SIDE ? (p & ~keep) | (*o & keep) : p;
    };
    if (first + STRIP_ROWS < n) {
        uint32_t even[STRIP_ROWS + 2], odd[STRIP_ROWS + 2];
#pragma unroll
        for (int k = 0; k < STRIP_ROWS + 2; ++k) word(first - 1 + k, &even[k], &odd[k]);
#pragma unroll
        for (int k = 0; k < STRIP_ROWS; ++k)
            put(first + k, even[k] + even[k + 1] + even[k + 2], odd[k] + odd[k + 1] + odd[k + 2]);
    } else {
        uint32_t ea, oa, eh, oh, eb, ob;
        word(first - 1, &ea, &oa);
        word(first, &eh, &oh);
        for (size_t i = first; i + 1 < n; ++i) {
            word(i + 1, &eb, &ob);
            put(i, ea + eh + eb, oa + oh + ob);
            ea = eh; oa = oh; eh = eb; oh = ob;
        }
    }
}

__global__ void smooth_words_kernel(const uint32_t* x, uint32_t* out, size_t n, size_t w) {
    size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t first = 1 + (blockIdx.y * (size_t)blockDim.y + threadIdx.y) * STRIP_ROWS;
    if (j >= w || first + 1 >= n) return;
    if (0 < j && j + 1 < w)
        words_strip<false>(x, out, n, w, j, first);
    else
        words_strip<true>(x, out, n, w, j, first);
}

__global__ void integrate_kernel(size_t n, double* sums) {
    __shared__ double partial[INTEGRATE_TPB];
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    unsigned t = threadIdx.x;
    double h = M_PI / (double)n;
    double acc = 0.0;
    if (i < n) {
        double x = (i + 0.5) * h;
        for (size_t j = 0; j < n; ++j) acc += sin(x + (j + 0.5) * h);
        acc *= h * h;
    }
    partial[t] = acc;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) partial[t] += partial[t + stride];
        __syncthreads();
    }
    if (t == 0) sums[blockIdx.x] = partial[0];
}

__global__ void matmul_kernel(const float* a, const float* b, float* c, int n, int k, int m) {
    __shared__ float sa[TPB][TPB];
    __shared__ float sb[TPB][TPB];
    int col = blockIdx.x * TPB + threadIdx.x, row = blockIdx.y * TPB + threadIdx.y;
    int tx = threadIdx.x, ty = threadIdx.y;
    float acc = 0.0f;
    for (int t = 0; t < (k + TPB - 1) / TPB; ++t) {
        sa[ty][tx] = (row < n && t * TPB + tx < k) ? a[(size_t)row * k + t * TPB + tx] : 0.0f;
        sb[ty][tx] = (col < m && t * TPB + ty < k) ? b[(size_t)(t * TPB + ty) * m + col] : 0.0f;
        __syncthreads();
        for (int q = 0; q < TPB; ++q) acc += sa[ty][q] * sb[q][tx];
        __syncthreads();
    }
    if (row < n && col < m) c[(size_t)row * m + col] = acc;
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t k = v.size();
    return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

static double kernel_ms(int reps, const std::function<void()>& f) {
    f();
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t s, e;
    CHECK(cudaEventCreate(&s));
    CHECK(cudaEventCreate(&e));
    std::vector<double> times;
    for (int r = 0; r < reps; ++r) {
        CHECK(cudaEventRecord(s));
        f();
        CHECK(cudaEventRecord(e));
        CHECK(cudaEventSynchronize(e));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, s, e));
        times.push_back(ms);
    }
    CHECK(cudaGetLastError());
    return median(times);
}

static double wall_ms(int reps, const std::function<void()>& f) {
    f();
    std::vector<double> times;
    for (int r = 0; r < reps; ++r) {
        auto t = std::chrono::steady_clock::now();
        f();
        times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
    }
    return median(times);
}

static void emit(const char* program, const std::string& size, double k, double e, double bytes,
                 const std::string& check) {
    std::printf("{\"impl\": \"cuda\", \"program\": \"%s\", \"size\": \"%s\", \"kernel_ms\": %.6f, "
                "\"e2e_ms\": %s, \"bytes\": %s, \"check\": \"%s\"}\n",
                program, size.c_str(), k, e >= 0 ? std::to_string(e).c_str() : "null",
                bytes > 0 ? std::to_string(bytes).c_str() : "null", check.c_str());
    std::fflush(stdout);
}

template <typename T>
static T* dev_alloc(size_t n) {
    T* p = nullptr;
    CHECK(cudaMalloc(&p, n * sizeof(T)));
    return p;
}

// quicksort: each pass splits every segment longer than SMALL into up to PARTS parts (as many as
// take it to parts of about SMALL / 2 keys in the fewest passes): one block per segment sorts a
// 127-key sample and takes its pivots at even ranks (the last pivot slot is always 0xffffffff);
// blocks of SPLIT_THREADS count each CHUNK's keys per bucket (between two pivots, or equal to
// one) in shared memory and add the counts up per segment (two per part, packed from the
// segment's first count); blocks take the chunks again, order them by bucket in shared memory,
// claim room in each bucket with one atomic per bucket and write each bucket's keys as one run
// into the other buffer. One thread per segment then files its buckets on the device: those
// between pivots longer than SMALL are the next pass's segments, the rest are gathered into runs
// finished by a bitonic sort in shared memory, launched at once; long runs of equal keys left in
// the scratch buffer are copied back. Only the number of each and the next segments come back
// to the host. As gpu-kernels/src/quicksort.rs.
constexpr unsigned QS_THREADS = 256;
constexpr unsigned SPLIT_THREADS = 512;
constexpr unsigned KEYS_PER_THREAD = 8;
constexpr unsigned CHUNK = SPLIT_THREADS * KEYS_PER_THREAD;
constexpr unsigned SMALL = 1024;
constexpr unsigned PARTS = 32;
constexpr unsigned BUCKETS = 2 * PARTS;
constexpr unsigned SAMPLES = 127;
constexpr unsigned PIVOT_THREADS = SAMPLES + 1;
constexpr unsigned RANK_BITS = 16;
constexpr unsigned GATHERED = 64;
constexpr unsigned FILE_THREADS = 128;

__host__ __device__ __forceinline__ unsigned pow2_at_least(unsigned v) {
    unsigned p = 1;
    while (p < v) p *= 2;
    return p;
}

// The parts a segment of len keys is split into, a power of two up to PARTS: as few as take it to
// parts of about SMALL / 2 keys in the fewest passes, the first passes taking the extra.
__host__ __device__ __forceinline__ unsigned parts_of(unsigned len) {
    unsigned bits = 0, need = (len + SMALL / 2 - 1) / (SMALL / 2);
    while ((1u << bits) < need) ++bits;
    unsigned passes = (bits + 4) / 5;  // PARTS = 2^5
    if (passes == 0) passes = 1;
    return 1u << (bits + passes - 1) / passes;
}

// 2i where i pivots are below v and pivot i is above it, 2i + 1 where pivot i equals it.
__device__ __forceinline__ unsigned bucket_of(unsigned v, const unsigned* pivot) {
    unsigned i = 0;
    for (unsigned step = PARTS / 2; step > 0; step /= 2)
        if (pivot[i + step - 1] < v) i += step;
    return 2 * i + (pivot[i] == v);
}

// Per segment b (start, length, first count): its pivots, and its counts and cursors cleared.
__global__ void qs_pivots(const unsigned* keys, const unsigned* segs, unsigned* pivots, unsigned* counts,
                          unsigned* cursors) {
    __shared__ unsigned sample[SAMPLES], sorted[SAMPLES];
    unsigned b = blockIdx.x, t = threadIdx.x;
    size_t start = segs[3 * b], len = segs[3 * b + 1];
    unsigned base = segs[3 * b + 2], parts = parts_of((unsigned)len);
    if (t < SAMPLES) sample[t] = keys[start + (len - 1) * t / (SAMPLES - 1)];
    if (t < 2 * parts) counts[base + t] = cursors[base + t] = 0;
    __syncthreads();
    if (t < SAMPLES) {
        unsigned v = sample[t], rank = 0;
        for (unsigned i = 0; i < SAMPLES; ++i) rank += sample[i] < v || (sample[i] == v && i < t);
        sorted[rank] = v;
    }
    __syncthreads();
    if (t < PARTS) {
        pivots[PARTS * b + t] = t + 1 < parts ? sorted[(t + 1) * PIVOT_THREADS / parts - 1] : 0xffffffffu;
    }
}

// The chunk's keys t + r * SPLIT_THREADS, all loads in flight before the first is used.
__device__ __forceinline__ void load_chunk(const unsigned* src, size_t from, unsigned n, unsigned t,
                                           unsigned (&keys)[KEYS_PER_THREAD]) {
#pragma unroll
    for (unsigned r = 0; r < KEYS_PER_THREAD; ++r) {
        unsigned k = t + r * SPLIT_THREADS;
        keys[r] = k < n ? src[from + k] : 0;
    }
}

__global__ void qs_count(const unsigned* src, const unsigned* segs, const unsigned* table, const unsigned* pivots,
                         unsigned* counts) {
    __shared__ unsigned pivot[PARTS], tally[BUCKETS];
    unsigned b = blockIdx.x, t = threadIdx.x;
    size_t from = table[3 * b];
    unsigned n = table[3 * b + 1], seg = table[3 * b + 2];
    if (t < PARTS) pivot[t] = pivots[PARTS * seg + t];
    if (t < BUCKETS) tally[t] = 0;
    unsigned keys[KEYS_PER_THREAD];
    load_chunk(src, from, n, t, keys);
    __syncthreads();
#pragma unroll
    for (unsigned r = 0; r < KEYS_PER_THREAD; ++r)
        if (t + r * SPLIT_THREADS < n) atomicAdd(&tally[bucket_of(keys[r], pivot)], 1u);
    __syncthreads();
    if (t < BUCKETS && tally[t] > 0) atomicAdd(&counts[segs[3 * seg + 2] + t], tally[t]);
}

__global__ void qs_scatter(const unsigned* src, const unsigned* segs, const unsigned* table, const unsigned* pivots,
                           const unsigned* counts, unsigned* cursors, unsigned* dst) {
    __shared__ unsigned pivot[PARTS], tally[BUCKETS], totals[BUCKETS], first[BUCKETS], offset[BUCKETS];
    __shared__ unsigned staged[CHUNK];
    __shared__ unsigned char staged_bucket[CHUNK];
    unsigned b = blockIdx.x, t = threadIdx.x;
    size_t from = table[3 * b];
    unsigned n = table[3 * b + 1], seg = table[3 * b + 2];
    unsigned start = segs[3 * seg], base = segs[3 * seg + 2], buckets = 2 * parts_of(segs[3 * seg + 1]);
    if (t < PARTS) pivot[t] = pivots[PARTS * seg + t];
    if (t < BUCKETS) tally[t] = 0;
    if (t < buckets) totals[t] = counts[base + t];
    unsigned keys[KEYS_PER_THREAD], places[KEYS_PER_THREAD];
    load_chunk(src, from, n, t, keys);
    __syncthreads();
#pragma unroll
    for (unsigned r = 0; r < KEYS_PER_THREAD; ++r) {
        if (t + r * SPLIT_THREADS < n) {
            unsigned bucket = bucket_of(keys[r], pivot);
            places[r] = bucket << RANK_BITS | atomicAdd(&tally[bucket], 1u);
        }
    }
    __syncthreads();
    if (t == 0) {
        unsigned in_chunk = 0, in_segment = start;
        for (unsigned k = 0; k < buckets; ++k) {
            first[k] = in_chunk;
            offset[k] = in_segment;
            in_chunk += tally[k];
            in_segment += totals[k];
        }
    }
    __syncthreads();
    if (t < buckets && tally[t] > 0) offset[t] = offset[t] + atomicAdd(&cursors[base + t], tally[t]) - first[t];
#pragma unroll
    for (unsigned r = 0; r < KEYS_PER_THREAD; ++r) {
        if (t + r * SPLIT_THREADS < n) {
            unsigned bucket = places[r] >> RANK_BITS, at = first[bucket] + (places[r] & ((1u << RANK_BITS) - 1));
            staged[at] = keys[r];
            staged_bucket[at] = (unsigned char)bucket;
        }
    }
    __syncthreads();
    for (unsigned k = t; k < n; k += SPLIT_THREADS) dst[offset[staged_bucket[k]] + k] = staged[k];
}

// A run of `run` keys to sort in one block takes in the next bucket where both fit in SMALL and
// their network is no longer than the longer one's (or GATHERED keys').
__device__ __forceinline__ bool gathers(unsigned run, unsigned len) {
    unsigned both = run + len;
    return both <= SMALL && pow2_at_least(both) <= pow2_at_least(max(max(run, len), GATHERED));
}

enum Filed { RUN, SEGMENT, COPY };

// The buckets lens[0..buckets) of a segment at `start`, split into the scratch buffer where
// `scratch`, filed in order through emit(kind, first key, keys).
template <class Emit>
__device__ void file(unsigned start, const unsigned* lens, unsigned buckets, bool scratch, Emit emit) {
    unsigned run = start, run_len = 0, next = start;
    auto close = [&] {
        if (run_len > 1 || (run_len == 1 && scratch)) emit(RUN, run, run_len);
    };
    for (unsigned bucket = 0; bucket < buckets; ++bucket) {
        unsigned len = lens[bucket];
        if (!gathers(run_len, len)) {
            close();
            run = next;
            run_len = 0;
        }
        if (len <= SMALL) {
            run_len += len;
        } else {
            if (bucket % 2 == 0) emit(SEGMENT, next, len);
            else if (scratch) emit(COPY, next, len);
            run = next + len;
        }
        next += len;
    }
    close();
}

// Thread s: files segment s's buckets into runs (start, length, scratch), next segments (start,
// length) and chunks to copy (first key, keys, 0); filed[0..3) count the rows taken, filed[3]
// becomes s + 1 where the counts do not split the segment, filed[4] counts the segments seen.
__global__ void qs_file(const unsigned* segs, unsigned nsegs, const unsigned* counts, unsigned scratch,
                        unsigned* filed, unsigned* runs, unsigned* large, unsigned* copies) {
    unsigned s = blockIdx.x * FILE_THREADS + threadIdx.x;
    if (s >= nsegs) return;
    unsigned start = segs[3 * s], len = segs[3 * s + 1], buckets = 2 * parts_of(len);
    const unsigned* lens = counts + segs[3 * s + 2];
    atomicAdd(&filed[4], 1u);
    unsigned long long total = 0;
    bool shrinks = true;
    for (unsigned k = 0; k < buckets; ++k) {
        total += lens[k];
        shrinks &= k % 2 == 1 || lens[k] < len;
    }
    if (total != len || !shrinks) {
        atomicMax(&filed[3], s + 1);
        return;
    }
    unsigned nrun = 0, nseg = 0, ncopy = 0;
    file(start, lens, buckets, scratch != 0, [&](Filed kind, unsigned, unsigned n) {
        if (kind == RUN) ++nrun;
        else if (kind == SEGMENT) ++nseg;
        else ncopy += (n + CHUNK - 1) / CHUNK;
    });
    unsigned r = nrun ? atomicAdd(&filed[0], nrun) : 0, g = nseg ? atomicAdd(&filed[1], nseg) : 0,
             c = ncopy ? atomicAdd(&filed[2], ncopy) : 0;
    file(start, lens, buckets, scratch != 0, [&](Filed kind, unsigned first, unsigned n) {
        if (kind == RUN) {
            runs[3 * r] = first;
            runs[3 * r + 1] = n;
            runs[3 * r + 2] = scratch;
            ++r;
        } else if (kind == SEGMENT) {
            large[2 * g] = first;
            large[2 * g + 1] = n;
            ++g;
        } else {
            for (unsigned from = first; from < first + n; from += CHUNK, ++c) {
                copies[3 * c] = from;
                copies[3 * c + 1] = min(CHUNK, first + n - from);
                copies[3 * c + 2] = 0;
            }
        }
    });
}

// Block b: the keys table[3b], table[3b + 1] (first key, keys) copied from scratch to keys.
__global__ void qs_copy(unsigned* keys, const unsigned* scratch, const unsigned* table) {
    size_t first = table[3 * blockIdx.x];
    unsigned n = table[3 * blockIdx.x + 1];
    for (unsigned k = threadIdx.x; k < n; k += QS_THREADS) keys[first + k] = scratch[first + k];
}

__device__ __forceinline__ void ordered(unsigned& x, unsigned& y, bool ascending) {
    unsigned low = min(x, y), high = max(x, y);
    x = ascending ? low : high;
    y = ascending ? high : low;
}

// A bitonic sort of the run padded to a power of two (at least 4), two stages of the network to a
// pass over shared memory: each thread reads four keys closed under both strides.
__global__ void qs_sort_small(unsigned* keys, const unsigned* scratch, const unsigned* table) {
    __shared__ unsigned s[SMALL];
    unsigned b = blockIdx.x, t = threadIdx.x;
    size_t start = table[3 * b];
    unsigned len = table[3 * b + 1];
    const unsigned* src = table[3 * b + 2] ? scratch : keys;
    unsigned n = 4;
    while (n < len) n *= 2;
    for (unsigned k = t; k < n; k += QS_THREADS) s[k] = k < len ? src[start + k] : 0xffffffffu;
    __syncthreads();
    for (unsigned size = 2; size <= n; size *= 2) {
        for (unsigned stride = size / 2; stride > 0;) {
            bool two = __ffs(stride) % 2 == 0;  // an even number of strides left: two at a time
            for (unsigned group = t; group < n / 4; group += QS_THREADS) {
                if (two) {
                    unsigned half = stride / 2;
                    unsigned a = ((group & ~(half - 1)) << 2) | (group & (half - 1));
                    bool ascending = (a & size) == 0;
                    unsigned w = s[a], x = s[a + half], y = s[a + stride], z = s[a + stride + half];
                    ordered(w, y, ascending);
                    ordered(x, z, ascending);
                    ordered(w, x, ascending);
                    ordered(y, z, ascending);
                    s[a] = w;
                    s[a + half] = x;
                    s[a + stride] = y;
                    s[a + stride + half] = z;
                } else {
                    for (unsigned pair : {group, group + n / 4}) {
                        unsigned a = ((pair & ~(stride - 1)) << 1) | (pair & (stride - 1));
                        unsigned x = s[a], y = s[a + stride];
                        ordered(x, y, (a & size) == 0);
                        s[a] = x;
                        s[a + stride] = y;
                    }
                }
            }
            __syncthreads();
            stride /= two ? 4 : 2;
        }
    }
    for (unsigned k = t; k < len; k += QS_THREADS) keys[start + k] = s[k];
}

// A device buffer that grows to what is asked of it.
struct DevBuf {
    unsigned* p = nullptr;
    size_t cap = 0;
    unsigned* get(size_t n) {
        if (n > cap) {
            if (p) CHECK(cudaFree(p));
            p = dev_alloc<unsigned>(n);
            cap = n;
        }
        return p;
    }
    unsigned* upload(const std::vector<unsigned>& v) {
        unsigned* d = get(v.size());
        CHECK(cudaMemcpy(d, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
        return d;
    }
    ~DevBuf() {
        if (p) cudaFree(p);
    }
};

// The host's side of the quicksort, with its device buffers kept from sort to sort.
struct QuickSort {
    size_t n;
    DevBuf scratch, segs, table, pivots, counts, cursors, filed, runs, next, copies, one;

    explicit QuickSort(size_t n) : n(n) { scratch.get(n); }

    static void chunks(std::vector<unsigned>& t, unsigned start, unsigned len, unsigned tag) {
        for (unsigned from = start; from < start + len; from += CHUNK)
            t.insert(t.end(), {from, std::min(CHUNK, start + len - from), tag});
    }

    void sort(unsigned* keys) {
        if (n <= SMALL) {
            if (n > 1) qs_sort_small<<<1, QS_THREADS>>>(keys, scratch.p, one.upload({0, (unsigned)n, 0}));
            return;
        }
        std::vector<unsigned> large = {0, (unsigned)n}, segs_h, tab;
        bool in_scratch = false;  // where the segments still to split lie
        while (!large.empty()) {
            unsigned nsegs = (unsigned)large.size() / 2, buckets = 0;
            size_t most_runs = 0, most_segs = 0, most_copies = 0;
            segs_h.clear();
            tab.clear();
            for (unsigned i = 0; i < nsegs; ++i) {
                unsigned start = large[2 * i], len = large[2 * i + 1], parts = parts_of(len);
                segs_h.insert(segs_h.end(), {start, len, buckets});
                buckets += 2 * parts;
                chunks(tab, start, len, i);
                most_runs += 2 * parts + 1;
                most_segs += parts;
                most_copies += (len + CHUNK - 1) / CHUNK + parts;
            }
            unsigned blocks = (unsigned)tab.size() / 3;
            const unsigned* src = in_scratch ? scratch.p : keys;
            unsigned* dst = in_scratch ? keys : scratch.p;
            unsigned *segs_d = segs.upload(segs_h), *table_d = table.upload(tab);
            unsigned *pivots_d = pivots.get(PARTS * nsegs), *counts_d = counts.get(buckets),
                     *cursors_d = cursors.get(buckets), *filed_d = filed.get(5), *runs_d = runs.get(3 * most_runs),
                     *next_d = next.get(2 * most_segs), *copies_d = copies.get(3 * most_copies);
            qs_pivots<<<nsegs, PIVOT_THREADS>>>(src, segs_d, pivots_d, counts_d, cursors_d);
            qs_count<<<blocks, SPLIT_THREADS>>>(src, segs_d, table_d, pivots_d, counts_d);
            qs_scatter<<<blocks, SPLIT_THREADS>>>(src, segs_d, table_d, pivots_d, counts_d, cursors_d, dst);
            in_scratch = !in_scratch;
            CHECK(cudaMemsetAsync(filed_d, 0, 5 * 4));
            qs_file<<<(nsegs + FILE_THREADS - 1) / FILE_THREADS, FILE_THREADS>>>(
                segs_d, nsegs, counts_d, in_scratch ? 1u : 0u, filed_d, runs_d, next_d, copies_d);
            unsigned filed_h[5];
            CHECK(cudaMemcpy(filed_h, filed_d, sizeof filed_h, cudaMemcpyDeviceToHost));
            if (filed_h[3] != 0 || filed_h[4] != nsegs) {
                std::fprintf(stderr, "peers_cuda: quicksort: segment %u of a pass did not split\n", filed_h[3]);
                std::exit(1);
            }
            large.resize(2 * filed_h[1]);
            if (!large.empty())
                CHECK(cudaMemcpy(large.data(), next_d, large.size() * 4, cudaMemcpyDeviceToHost));
            if (filed_h[2]) qs_copy<<<filed_h[2], QS_THREADS>>>(keys, scratch.p, copies_d);
            if (filed_h[0]) qs_sort_small<<<filed_h[0], QS_THREADS>>>(keys, scratch.p, runs_d);
        }
    }
};

int main(int argc, char** argv) {
    int reps = argc > 1 ? std::atoi(argv[1]) : 20;
    if (reps < 1) reps = 1;
    char buf[64];

    {  // add-list
        size_t n = 100000000;
        std::vector<float> ones(n, 1.0f), c(n);
        float *a = dev_alloc<float>(n), *b = dev_alloc<float>(n), *d = dev_alloc<float>(n);
        CHECK(cudaMemcpy(a, ones.data(), n * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(b, ones.data(), n * 4, cudaMemcpyHostToDevice));
        unsigned blocks = (unsigned)((n + 255) / 256);
        double k = kernel_ms(reps, [&] { add_kernel<<<blocks, 256>>>(a, b, d, n); });
        double e = wall_ms(std::min(reps, 5), [&] {
            float *x = dev_alloc<float>(n), *y = dev_alloc<float>(n), *z = dev_alloc<float>(n);
            CHECK(cudaMemcpy(x, ones.data(), n * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(y, ones.data(), n * 4, cudaMemcpyHostToDevice));
            add_kernel<<<blocks, 256>>>(x, y, z, n);
            CHECK(cudaMemcpy(c.data(), z, n * 4, cudaMemcpyDeviceToHost));
            CHECK(cudaFree(x)); CHECK(cudaFree(y)); CHECK(cudaFree(z));
        });
        double sum = 0;
        for (float v : c) sum += v;
        std::snprintf(buf, sizeof buf, "%.1f", sum);
        emit("add", std::to_string(n) + " f32", k, e, 12.0 * n, buf);
        unsigned wide_blocks = (unsigned)(((n + 3) / 4 + 255) / 256);
        k = kernel_ms(reps, [&] { add_wide_kernel<<<wide_blocks, 256>>>(a, b, d, n); });
        e = wall_ms(std::min(reps, 5), [&] {
            float *x = dev_alloc<float>(n), *y = dev_alloc<float>(n), *z = dev_alloc<float>(n);
            CHECK(cudaMemcpy(x, ones.data(), n * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(y, ones.data(), n * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemset(z, 0, n * 4));
            add_wide_kernel<<<wide_blocks, 256>>>(x, y, z, n);
            CHECK(cudaMemcpy(c.data(), z, n * 4, cudaMemcpyDeviceToHost));
            CHECK(cudaFree(x)); CHECK(cudaFree(y)); CHECK(cudaFree(z));
        });
        sum = 0;
        for (float v : c) sum += v;
        std::snprintf(buf, sizeof buf, "%.1f", sum);
        emit("add-wide", std::to_string(n) + " f32", k, e, 12.0 * n, buf);
        // The same end to end from and to page-locked host buffers, filled before the timing
        // (our add-pinned, through `Device::pinned`).
        float *hp = nullptr, *cp = nullptr;
        CHECK(cudaMallocHost(&hp, n * 4));
        CHECK(cudaMallocHost(&cp, n * 4));
        for (size_t i = 0; i < n; ++i) hp[i] = 1.0f;
        k = kernel_ms(reps, [&] { add_kernel<<<blocks, 256>>>(a, b, d, n); });
        e = wall_ms(std::min(reps, 5), [&] {
            float *x = dev_alloc<float>(n), *y = dev_alloc<float>(n), *z = dev_alloc<float>(n);
            CHECK(cudaMemcpy(x, hp, n * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(y, hp, n * 4, cudaMemcpyHostToDevice));
            CHECK(cudaMemset(z, 0, n * 4));
            add_kernel<<<blocks, 256>>>(x, y, z, n);
            CHECK(cudaMemcpy(cp, z, n * 4, cudaMemcpyDeviceToHost));
            CHECK(cudaFree(x)); CHECK(cudaFree(y)); CHECK(cudaFree(z));
        });
        sum = 0;
        for (size_t i = 0; i < n; ++i) sum += cp[i];
        std::snprintf(buf, sizeof buf, "%.1f", sum);
        emit("add-pinned", std::to_string(n) + " f32", k, e, 12.0 * n, buf);
        // The same from and to page-locked buffers in 16 chunks through 3 streams, each with
        // device buffers of its own, allocated in the timing (our add-streams, `add_chunked`):
        // chunk c + 1 comes in while chunk c is added and chunk c - 1 goes out.
        {
            const int S = 3;
            const size_t chunk = (n + 15) / 16;
            cudaStream_t st[S];
            for (auto& s : st) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
            e = wall_ms(std::min(reps, 5), [&] {
                float* bufs[S][3];
                for (auto& sb : bufs)
                    for (auto& p : sb) p = dev_alloc<float>(chunk);
                for (size_t at = 0, c = 0; at < n; at += chunk, ++c) {
                    int s = (int)(c % S);
                    size_t len = std::min(chunk, n - at);
                    float *x = bufs[s][0], *y = bufs[s][1], *z = bufs[s][2];
                    CHECK(cudaMemcpyAsync(x, hp + at, len * 4, cudaMemcpyHostToDevice, st[s]));
                    CHECK(cudaMemcpyAsync(y, hp + at, len * 4, cudaMemcpyHostToDevice, st[s]));
                    add_kernel<<<(unsigned)((len + 255) / 256), 256, 0, st[s]>>>(x, y, z, len);
                    CHECK(cudaMemcpyAsync(cp + at, z, len * 4, cudaMemcpyDeviceToHost, st[s]));
                }
                for (auto& s : st) CHECK(cudaStreamSynchronize(s));
                for (auto& sb : bufs)
                    for (auto p : sb) CHECK(cudaFree(p));
            });
            for (auto& s : st) CHECK(cudaStreamDestroy(s));
            sum = 0;
            for (size_t i = 0; i < n; ++i) sum += cp[i];
            std::snprintf(buf, sizeof buf, "%.1f", sum);
            emit("add-streams", std::to_string(n) + " f32", k, e, 12.0 * n, buf);
        }
        CHECK(cudaFreeHost(hp)); CHECK(cudaFreeHost(cp));
        CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(d));
    }
    {  // smooth
        size_t n = 10000;
        std::vector<int8_t> x(n * n), out(n * n);
        for (size_t i = 0; i < n; ++i)
            for (size_t j = 0; j < n; ++j) x[i * n + j] = (int8_t)((int)((i * 31 + j * 17) % 251) - 125);
        int8_t *dx = dev_alloc<int8_t>(n * n), *dout = dev_alloc<int8_t>(n * n);
        CHECK(cudaMemcpy(dx, x.data(), n * n, cudaMemcpyHostToDevice));
        CHECK(cudaMemset(dout, 0, n * n));
        dim3 grid((unsigned)((n + 15) / 16), (unsigned)((n + 15) / 16)), block(16, 16);
        double k = kernel_ms(reps, [&] { smooth_kernel<<<grid, block>>>(dx, dout, n, n); });
        double e = wall_ms(std::min(reps, 5), [&] {
            int8_t *y = dev_alloc<int8_t>(n * n), *o = dev_alloc<int8_t>(n * n);
            CHECK(cudaMemcpy(y, x.data(), n * n, cudaMemcpyHostToDevice));
            CHECK(cudaMemset(o, 0, n * n));
            smooth_kernel<<<grid, block>>>(y, o, n, n);
            CHECK(cudaMemcpy(out.data(), o, n * n, cudaMemcpyDeviceToHost));
            CHECK(cudaFree(y)); CHECK(cudaFree(o));
        });
        auto check = [&] {
            long long c = 0;
            for (size_t i = 0; i < n; ++i)
                for (size_t j = 0; j < n; ++j) c += (long long)out[i * n + j] * (long long)((i + 2 * j) % 7 + 1);
            return std::to_string(c);
        };
        std::string size = std::to_string(n) + "x" + std::to_string(n) + " i8";
        emit("smooth", size, k, e, 2.0 * n * n, check());
        // The same end to end from and to page-locked host buffers, filled before the timing
        // (our smooth-pinned, through `Device::pinned`).
        int8_t *hx = nullptr, *ho = nullptr;
        CHECK(cudaMallocHost(&hx, n * n));
        CHECK(cudaMallocHost(&ho, n * n));
        std::memcpy(hx, x.data(), n * n);
        double ep = wall_ms(std::min(reps, 5), [&] {
            int8_t *y = dev_alloc<int8_t>(n * n), *o = dev_alloc<int8_t>(n * n);
            CHECK(cudaMemcpy(y, hx, n * n, cudaMemcpyHostToDevice));
            CHECK(cudaMemset(o, 0, n * n));
            smooth_kernel<<<grid, block>>>(y, o, n, n);
            CHECK(cudaMemcpy(ho, o, n * n, cudaMemcpyDeviceToHost));
            CHECK(cudaFree(y)); CHECK(cudaFree(o));
        });
        std::memcpy(out.data(), ho, n * n);
        emit("smooth-pinned", size, k, ep, 2.0 * n * n, check());
        CHECK(cudaFreeHost(hx)); CHECK(cudaFreeHost(ho));

        CHECK(cudaMemset(dout, 0, n * n));
        dim3 strips((unsigned)((n + STRIP_THREADS - 1) / STRIP_THREADS),
                    (unsigned)((n - 2 + STRIP_ROWS - 1) / STRIP_ROWS));
        k = kernel_ms(reps, [&] { smooth_strips_kernel<<<strips, dim3(STRIP_THREADS, 1)>>>(dx, dout, n, n); });
        CHECK(cudaMemcpy(out.data(), dout, n * n, cudaMemcpyDeviceToHost));
        emit("smooth-strips", size + ", strips of " + std::to_string(STRIP_ROWS) + " rows", k, -1,
             2.0 * n * n, check());

        CHECK(cudaMemset(dout, 0, n * n));
        size_t w = n / 4;
        dim3 words((unsigned)((w + WORD_THREADS - 1) / WORD_THREADS), strips.y);
        const uint32_t* wx = reinterpret_cast<const uint32_t*>(dx);
        uint32_t* wout = reinterpret_cast<uint32_t*>(dout);
        k = kernel_ms(reps, [&] { smooth_words_kernel<<<words, dim3(WORD_THREADS, 1)>>>(wx, wout, n, w); });
        CHECK(cudaMemcpy(out.data(), dout, n * n, cudaMemcpyDeviceToHost));
        emit("smooth-words", size + " as u32 words, strips of " + std::to_string(STRIP_ROWS) + " rows",
             k, -1, 2.0 * n * n, check());
        CHECK(cudaFree(dx)); CHECK(cudaFree(dout));
    }
    {  // integrate2d
        size_t n = 102400;
        unsigned blocks = (unsigned)((n + INTEGRATE_TPB - 1) / INTEGRATE_TPB);
        std::vector<double> sums(blocks);
        double* d = dev_alloc<double>(blocks);
        double k = kernel_ms(reps, [&] { integrate_kernel<<<blocks, INTEGRATE_TPB>>>(n, d); });
        double value = 0;
        double e = wall_ms(std::min(reps, 5), [&] {
            double* s = dev_alloc<double>(blocks);
            integrate_kernel<<<blocks, INTEGRATE_TPB>>>(n, s);
            CHECK(cudaMemcpy(sums.data(), s, blocks * 8, cudaMemcpyDeviceToHost));
            CHECK(cudaFree(s));
            value = 0;
            for (double v : sums) value += v;
        });
        std::snprintf(buf, sizeof buf, "%.9f", value + 0.0);
        std::string check = buf;
        if (check == "-0.000000000") check = "0.000000000";
        emit("integrate2d", "n = " + std::to_string(n) + ", shared", k, e, 0, check);
        CHECK(cudaFree(d));
    }
    {  // matmul
        int n = 4096;
        std::vector<float> a((size_t)n * n), b((size_t)n * n), c((size_t)n * n);
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) {
                a[(size_t)i * n + j] = ((i * 7 + j * 3) % 13) * 0.125f - 0.75f;
                b[(size_t)i * n + j] = ((i * 5 + j * 11) % 17) * 0.0625f - 0.5f;
            }
        size_t bytes = (size_t)n * n * 4;
        float *da = dev_alloc<float>((size_t)n * n), *db = dev_alloc<float>((size_t)n * n),
              *dc = dev_alloc<float>((size_t)n * n);
        CHECK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
        dim3 grid((n + TPB - 1) / TPB, (n + TPB - 1) / TPB), block(TPB, TPB);
        double k = kernel_ms(std::min(reps, 10), [&] { matmul_kernel<<<grid, block>>>(da, db, dc, n, n, n); });
        double e = wall_ms(3, [&] {
            float *x = dev_alloc<float>((size_t)n * n), *y = dev_alloc<float>((size_t)n * n),
                  *z = dev_alloc<float>((size_t)n * n);
            CHECK(cudaMemcpy(x, a.data(), bytes, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(y, b.data(), bytes, cudaMemcpyHostToDevice));
            matmul_kernel<<<grid, block>>>(x, y, z, n, n, n);
            CHECK(cudaMemcpy(c.data(), z, bytes, cudaMemcpyDeviceToHost));
            CHECK(cudaFree(x)); CHECK(cudaFree(y)); CHECK(cudaFree(z));
        });
        double sum = 0;
        for (float v : c) sum += v;
        std::snprintf(buf, sizeof buf, "%.4f", sum);
        emit("matmul", std::to_string(n) + "x" + std::to_string(n) + " f32", k, e, 0, buf);
        CHECK(cudaFree(da)); CHECK(cudaFree(db)); CHECK(cudaFree(dc));
    }
    {  // quicksort
        size_t n = (size_t)1 << 26;
        std::vector<unsigned> keys(n), out(n);
        for (size_t i = 0; i < n; ++i) keys[i] = (unsigned)(((unsigned long long)i * 2654435761ull) % (1ull << 32)) >> 8;
        unsigned *d = dev_alloc<unsigned>(n), *fresh = dev_alloc<unsigned>(n);
        CHECK(cudaMemcpy(fresh, keys.data(), n * 4, cudaMemcpyHostToDevice));
        QuickSort qs(n);
        cudaEvent_t s, e;
        CHECK(cudaEventCreate(&s));
        CHECK(cudaEventCreate(&e));
        std::vector<double> times;
        for (int r = 0; r <= std::min(reps, 5); ++r) {  // the first run is the warm-up
            CHECK(cudaMemcpy(d, fresh, n * 4, cudaMemcpyDeviceToDevice));
            CHECK(cudaEventRecord(s));
            qs.sort(d);
            CHECK(cudaEventRecord(e));
            CHECK(cudaEventSynchronize(e));
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, s, e));
            if (r > 0) times.push_back(ms);
        }
        CHECK(cudaGetLastError());
        double e2e = wall_ms(3, [&] {
            CHECK(cudaMemcpy(d, keys.data(), n * 4, cudaMemcpyHostToDevice));
            qs.sort(d);
            CHECK(cudaMemcpy(out.data(), d, n * 4, cudaMemcpyDeviceToHost));
        });
        unsigned long long check = 0;
        for (size_t i = 0; i < n; ++i) check += (unsigned long long)out[i] * (i % 7 + 1);
        emit("quicksort", std::to_string(n) + " u32", median(times), e2e, 0, std::to_string(check));
        CHECK(cudaFree(d)); CHECK(cudaFree(fresh));
    }
    return 0;
}
