// CUDA C++ peers of `examples/device_bench.rs`: the same algorithms (one thread per element for
// add-list and smooth, smooth also in strips of rows and of words of four pixels, one thread per row with a shared-memory
// block reduction for integrate2d, the 16 x 16 shared-memory tiling for matmul, the sample-pivot
// quicksort), on the same inputs, with the same check values and JSON lines as the other peers
// (see gpu_numba.py).
//
//     nvcc -O3 -arch=native -o peers_cuda benches/peers/cuda/peers.cu && ./peers_cuda [reps]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
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

// quicksort: each pass partitions every segment longer than SMALL around the median of a
// 63-key sample (one block per segment, which also sets the segment's two cursors to its ends),
// by chunks of CHUNK keys that are partitioned in shared memory and written to the other buffer:
// the keys below the pivot at the lower cursor, those above under the upper one, each cursor
// moved by one atomic per chunk. Keys equal to the pivot are only counted: the room between the
// cursors is theirs, filled at the end. Segments of at most SMALL keys are finished by a bitonic
// sort in shared memory. As gpu-kernels/src/quicksort.rs.
constexpr unsigned QS_THREADS = 256;
constexpr unsigned CHUNK = QS_THREADS * 16;
constexpr unsigned SMALL = 1024;
constexpr unsigned SAMPLES = 63;
constexpr unsigned PIVOT_THREADS = 64;
constexpr unsigned SCAN_GROUP = 16;
constexpr unsigned SCAN_GROUPS = QS_THREADS / SCAN_GROUP;
constexpr unsigned COUNT_BITS = 21;
constexpr unsigned long long COUNT_MASK = (1ull << COUNT_BITS) - 1;

__device__ __forceinline__ unsigned side_of(unsigned v, unsigned pivot) {
    return v < pivot ? 0 : v == pivot ? 1 : 2;
}

// state[3b..3b+3] = the lower cursor, the upper cursor and the pivot of segment b.
__global__ void qs_pivot(const unsigned* keys, const unsigned* segs, unsigned* state) {
    __shared__ unsigned sample[SAMPLES];
    unsigned b = blockIdx.x, t = threadIdx.x;
    size_t start = segs[2 * b], len = segs[2 * b + 1];
    if (t < SAMPLES) sample[t] = keys[start + (len - 1) * t / (SAMPLES - 1)];
    __syncthreads();
    if (t < SAMPLES) {
        unsigned v = sample[t], rank = 0;
        for (unsigned i = 0; i < SAMPLES; ++i) rank += sample[i] < v || (sample[i] == v && i < t);
        if (rank == SAMPLES / 2) {
            state[3 * b] = (unsigned)start;
            state[3 * b + 1] = (unsigned)(start + len);
            state[3 * b + 2] = v;
        }
    }
}

__global__ void qs_partition(const unsigned* src, const unsigned* table, unsigned* state, unsigned* dst) {
    __shared__ unsigned chunk[CHUNK], staged[CHUNK];
    __shared__ unsigned long long before[QS_THREADS], groups[SCAN_GROUPS + 1];
    __shared__ unsigned runs[2];
    unsigned b = blockIdx.x, t = threadIdx.x;
    size_t from = table[3 * b];
    unsigned n = table[3 * b + 1], seg = table[3 * b + 2], pivot = state[3 * seg + 2];
    unsigned long long packed = 0;
    for (unsigned k = t; k < n; k += QS_THREADS) {
        unsigned v = src[from + k];
        chunk[k] = v;
        packed += 1ull << (COUNT_BITS * side_of(v, pivot));
    }
    before[t] = packed;
    __syncthreads();
    if (t < SCAN_GROUPS) {
        unsigned long long sum = 0;
        for (unsigned i = t * SCAN_GROUP; i < (t + 1) * SCAN_GROUP; ++i) {
            unsigned long long c = before[i];
            before[i] = sum;
            sum += c;
        }
        groups[t] = sum;
    }
    __syncthreads();
    if (t == 0) {
        unsigned long long sum = 0;
        for (unsigned g = 0; g < SCAN_GROUPS; ++g) {
            unsigned long long c = groups[g];
            groups[g] = sum;
            sum += c;
        }
        groups[SCAN_GROUPS] = sum;
        unsigned below = (unsigned)(sum & COUNT_MASK), above = (unsigned)(sum >> (2 * COUNT_BITS));
        runs[0] = atomicAdd(&state[3 * seg], below);
        runs[1] = atomicSub(&state[3 * seg + 1], above) - above;
    }
    __syncthreads();
    unsigned long long mine = groups[t / SCAN_GROUP] + before[t], total = groups[SCAN_GROUPS];
    unsigned below = (unsigned)(total & COUNT_MASK), kept = below + (unsigned)(total >> (2 * COUNT_BITS));
    unsigned at_below = (unsigned)(mine & COUNT_MASK), at_above = below + (unsigned)(mine >> (2 * COUNT_BITS));
    for (unsigned k = t; k < n; k += QS_THREADS) {
        unsigned v = chunk[k];
        unsigned s = side_of(v, pivot);
        if (s == 0) staged[at_below++] = v;
        else if (s == 2) staged[at_above++] = v;
    }
    __syncthreads();
    size_t o_below = runs[0], o_above = (size_t)runs[1] - below;
    for (unsigned k = t; k < kept; k += QS_THREADS) dst[k < below ? o_below + k : o_above + k] = staged[k];
}

// Block b: table[3b + 2] written to the keys table[3b], table[3b + 1] (first key, keys).
__global__ void qs_fill(unsigned* keys, const unsigned* table) {
    size_t first = table[3 * blockIdx.x];
    unsigned n = table[3 * blockIdx.x + 1], value = table[3 * blockIdx.x + 2];
    for (unsigned k = threadIdx.x; k < n; k += QS_THREADS) keys[first + k] = value;
}

__global__ void qs_sort_small(unsigned* keys, const unsigned* scratch, const unsigned* table) {
    __shared__ unsigned s[SMALL];
    unsigned b = blockIdx.x, t = threadIdx.x;
    size_t start = table[3 * b];
    unsigned len = table[3 * b + 1];
    const unsigned* src = table[3 * b + 2] ? scratch : keys;
    unsigned n = 2;
    while (n < len) n *= 2;
    for (unsigned k = t; k < n; k += QS_THREADS) s[k] = k < len ? src[start + k] : 0xffffffffu;
    __syncthreads();
    for (unsigned size = 2; size <= n; size *= 2) {
        for (unsigned stride = size / 2; stride > 0; stride /= 2) {
            for (unsigned idx = t; idx < n / 2; idx += QS_THREADS) {
                unsigned pos = ((idx & ~(stride - 1)) << 1) | (idx & (stride - 1)), partner = pos + stride;
                bool ascending = (pos & size) == 0;
                unsigned x = s[pos], y = s[partner];
                if ((x > y) == ascending) {
                    s[pos] = y;
                    s[partner] = x;
                }
            }
            __syncthreads();
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
    DevBuf scratch, segs, table, state, small, equal;

    explicit QuickSort(size_t n) : n(n) { scratch.get(n); }

    static void chunks(std::vector<unsigned>& t, unsigned start, unsigned len, unsigned tag) {
        for (unsigned from = start; from < start + len; from += CHUNK)
            t.insert(t.end(), {from, std::min(CHUNK, start + len - from), tag});
    }

    void sort(unsigned* keys) {
        std::vector<unsigned> large, small_t, equal_t, tab, state_h;
        bool in_scratch = false;  // where the segments still to partition lie
        auto segment = [&](unsigned start, unsigned len, bool at_scratch) {
            if (len > SMALL) large.insert(large.end(), {start, len});
            else if (len > 1 || (len == 1 && at_scratch)) small_t.insert(small_t.end(), {start, len, at_scratch ? 1u : 0u});
        };
        segment(0, (unsigned)n, false);
        while (!large.empty()) {
            std::vector<unsigned> segs_h;
            segs_h.swap(large);
            unsigned nsegs = (unsigned)segs_h.size() / 2;
            tab.clear();
            for (unsigned i = 0; i < nsegs; ++i) chunks(tab, segs_h[2 * i], segs_h[2 * i + 1], i);
            unsigned blocks = (unsigned)tab.size() / 3;
            const unsigned* src = in_scratch ? scratch.p : keys;
            unsigned* dst = in_scratch ? keys : scratch.p;
            unsigned *segs_d = segs.upload(segs_h), *table_d = table.upload(tab), *state_d = state.get(3 * nsegs);
            qs_pivot<<<nsegs, PIVOT_THREADS>>>(src, segs_d, state_d);
            qs_partition<<<blocks, QS_THREADS>>>(src, table_d, state_d, dst);
            state_h.resize(3 * nsegs);
            CHECK(cudaMemcpy(state_h.data(), state_d, 12 * (size_t)nsegs, cudaMemcpyDeviceToHost));
            for (unsigned i = 0; i < nsegs; ++i) {
                unsigned start = segs_h[2 * i], end = start + segs_h[2 * i + 1];
                unsigned lower = state_h[3 * i], upper = state_h[3 * i + 1];
                segment(start, lower - start, !in_scratch);
                chunks(equal_t, lower, upper - lower, state_h[3 * i + 2]);
                segment(upper, end - upper, !in_scratch);
            }
            in_scratch = !in_scratch;
        }
        if (!equal_t.empty()) qs_fill<<<(unsigned)equal_t.size() / 3, QS_THREADS>>>(keys, equal.upload(equal_t));
        if (!small_t.empty()) {
            qs_sort_small<<<(unsigned)small_t.size() / 3, QS_THREADS>>>(keys, scratch.p, small.upload(small_t));
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
