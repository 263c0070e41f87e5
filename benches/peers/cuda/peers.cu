// CUDA C++ peers of `examples/device_bench.rs`: the same algorithms (one thread per element for
// add-list and smooth, one thread per row with a shared-memory block reduction for integrate2d,
// the 16 x 16 shared-memory tiling for matmul), on the same inputs, with the same check values
// and JSON lines as the other peers (see gpu_numba.py).
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
                "\"e2e_ms\": %.6f, \"bytes\": %s, \"check\": \"%s\"}\n",
                program, size.c_str(), k, e, bytes > 0 ? std::to_string(bytes).c_str() : "null",
                check.c_str());
    std::fflush(stdout);
}

template <typename T>
static T* dev_alloc(size_t n) {
    T* p = nullptr;
    CHECK(cudaMalloc(&p, n * sizeof(T)));
    return p;
}

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
        long long check = 0;
        for (size_t i = 0; i < n; ++i)
            for (size_t j = 0; j < n; ++j) check += (long long)out[i * n + j] * (long long)((i + 2 * j) % 7 + 1);
        emit("smooth", std::to_string(n) + "x" + std::to_string(n) + " i8", k, e, 2.0 * n * n,
             std::to_string(check));
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
    return 0;
}
