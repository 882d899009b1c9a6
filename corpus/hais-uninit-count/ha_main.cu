// Exhibit's driver for the corpus (not upstream code): HAIS's hierarchical aggregation
// (hierarchical_aggregation_cuda: the kernels fragment_find_primary_ and concat_fragments_)
// before the fix "initialize allocated cuda memory" (PR #32), on a small scene: three primary
// instances and three fragments. Fragment 0 belongs to primary 0, fragment 1 to primary 2,
// fragment 2 is too far from any primary, and primary 1 absorbs no fragment. The result
// (primary_idxs_post, primary_offsets_post) is checked against a CPU reference; exit 1 if
// they differ.
//
// The upstream header pulls in <THC/THC.h> and torch (for the host-side op, not used here), so
// its include guard is defined first and the one prototype it declares for the CUDA code is
// declared here; the .cu file is then compiled as it is.
#define HIERARCHICAL_AGGREGATION_H
void hierarchical_aggregation_cuda(
    int fragment_total_point_num, int fragment_num, int *fragment_idxs, int *fragment_offsets, float *fragment_centers,
    int primary_total_point_num, int primary_num, int *primary_idxs, int *primary_offsets, float *primary_centers,
    int *primary_idxs_post, int *primary_offsets_post);
#include "lib/hais_ops/src/hierarchical_aggregation/hierarchical_aggregation.cu"

#include <cstdio>
#include <cstring>
#include <vector>

struct Cluster { float x, y, z; int cls, batch, npoints, first_point; };

// (idxs, offsets, centers) as the op's caller builds them (fill_cluster_idxs_): idxs rows are
// (cluster index, point index), centers rows (x, y, z, cls_label, batch_idx).
static void fill(const std::vector<Cluster> &cs, std::vector<int> &idxs, std::vector<int> &offsets,
                 std::vector<float> &centers) {
    offsets.assign(cs.size() + 1, 0);
    for (size_t i = 0; i < cs.size(); i++) {
        offsets[i + 1] = offsets[i] + cs[i].npoints;
        centers.insert(centers.end(), {cs[i].x, cs[i].y, cs[i].z, (float)cs[i].cls, (float)cs[i].batch});
        for (int j = 0; j < cs[i].npoints; j++) {
            idxs.push_back((int)i);
            idxs.push_back(cs[i].first_point + j);
        }
    }
}

// CPU reference of the aggregation: each fragment joins the nearest primary of its class and
// batch when it lies within max(0.01 * sqrt(primary points), class radius); each primary's
// points come first, then the points of the fragments it absorbed, in fragment order.
static void reference(const std::vector<Cluster> &prim, const std::vector<Cluster> &frag,
                      std::vector<int> &post_idxs, std::vector<int> &post_offsets) {
    const float class_radius_mean[20] = {-1., -1., 0.7047687683952325, 1.1732690381942337, 0.39644035821116036,
        1.011516629020215, 0.7260155292902369, 0.8674973999335017, 0.8374931435447094, 1.0454153869133096,
        0.32879464797430913, 1.1954566226966346, 0.8628817944400078, 1.0416287916782507, 0.6602697958671507,
        0.8541363897836871, 0.38055290598206537, 0.3011878752684007, 0.7420871812436316, 0.4474268644407741};
    std::vector<std::vector<int>> absorbed(prim.size());
    for (size_t f = 0; f < frag.size(); f++) {
        int best = -1;
        float best_d2 = 10000.f;
        for (size_t p = 0; p < prim.size(); p++) {
            if (prim[p].cls != frag[f].cls || prim[p].batch != frag[f].batch) continue;
            float dx = prim[p].x - frag[f].x, dy = prim[p].y - frag[f].y, dz = prim[p].z - frag[f].z;
            float d2 = dx * dx + dy * dy + dz * dz;
            if (d2 < best_d2) { best_d2 = d2; best = (int)p; }
        }
        if (best < 0) continue;
        float r = fmaxf(0.01f * sqrtf((float)prim[best].npoints), class_radius_mean[frag[f].cls]);
        if (best_d2 < r * r) absorbed[best].push_back((int)f);
    }
    post_offsets.assign(prim.size() + 1, 0);
    int row = 0;
    for (size_t p = 0; p < prim.size(); p++) {
        for (int j = 0; j < prim[p].npoints; j++, row++) {
            post_idxs[row * 2 + 0] = (int)p;
            post_idxs[row * 2 + 1] = prim[p].first_point + j;
        }
        for (int f : absorbed[p])
            for (int j = 0; j < frag[f].npoints; j++, row++) {
                post_idxs[row * 2 + 0] = (int)p;
                post_idxs[row * 2 + 1] = frag[f].first_point + j;
            }
        post_offsets[p + 1] = row;
    }
}

// Device memory a process has used and freed before the op runs (here: buffers of the sizes the
// op allocates, in the same order, filled with 0x01 bytes and freed), so that the op's own
// allocations get used memory rather than fresh zeroed pages, as they do in a long-running job.
static void use_and_free_device_memory(const std::vector<size_t> &sizes) {
    std::vector<void *> ptrs;
    for (size_t s : sizes) {
        void *p = nullptr;
        cudaMalloc(&p, s);
        cudaMemset(p, 0x01, s);
        ptrs.push_back(p);
    }
    cudaDeviceSynchronize();
    for (size_t i = ptrs.size(); i-- > 0;) cudaFree(ptrs[i]);
}

int main() {
    // Primary instances: class 2 at the origin, class 3 at (5, 5, 5), class 4 at (10, 0, 0).
    std::vector<Cluster> prim = {
        {0.f, 0.f, 0.f, 2, 0, 10, 0},
        {5.f, 5.f, 5.f, 3, 0, 8, 10},
        {10.f, 0.f, 0.f, 4, 0, 6, 18},
    };
    // Fragments: class 2 next to primary 0, class 4 next to primary 2, class 2 far from all.
    std::vector<Cluster> frag = {
        {0.1f, 0.f, 0.f, 2, 0, 3, 100},
        {10.2f, 0.f, 0.f, 4, 0, 2, 103},
        {20.f, 20.f, 20.f, 2, 0, 4, 105},
    };
    std::vector<int> f_idxs, f_offsets, p_idxs, p_offsets;
    std::vector<float> f_centers, p_centers;
    fill(frag, f_idxs, f_offsets, f_centers);
    fill(prim, p_idxs, p_offsets, p_centers);
    const int f_points = f_offsets.back(), p_points = p_offsets.back();
    const int n_frag = (int)frag.size(), n_prim = (int)prim.size();
    const int rows = f_points + p_points;  // the caller's size for primary_idxs_post

    use_and_free_device_memory({
        f_points * 2 * sizeof(int) + sizeof(int), (n_frag + 1) * sizeof(int), n_frag * 5 * sizeof(float) + sizeof(float),
        p_points * 2 * sizeof(int) + sizeof(int), (n_prim + 1) * sizeof(int), n_prim * 5 * sizeof(float) + sizeof(float),
        n_prim * MAX_PER_PRIMARY_ABSORB_FRAGMENT_NUM * sizeof(int) + sizeof(int), n_prim * sizeof(int) + sizeof(int),
        n_prim * MAX_PER_PRIMARY_ABSORB_POINT_NUM * 2 * sizeof(int) + sizeof(int), n_prim * sizeof(int) + sizeof(int),
    });

    // Outputs zeroed as the caller zeroes them; primary_idxs_post has room for the most the op
    // can write (MAX_PER_PRIMARY_ABSORB_POINT_NUM absorbed points per primary), so that a wrong
    // count cannot overrun it on the host.
    std::vector<int> post_idxs((size_t)(p_points + n_prim * MAX_PER_PRIMARY_ABSORB_POINT_NUM) * 2, 0);
    std::vector<int> post_offsets(n_prim + 1, 0);
    hierarchical_aggregation_cuda(f_points, n_frag, f_idxs.data(), f_offsets.data(), f_centers.data(),
                                  p_points, n_prim, p_idxs.data(), p_offsets.data(), p_centers.data(),
                                  post_idxs.data(), post_offsets.data());
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        printf("CUDA error: %s\n", cudaGetErrorString(err));
        return 1;
    }

    std::vector<int> ref_idxs(rows * 2, 0), ref_offsets;
    reference(prim, frag, ref_idxs, ref_offsets);

    int bad = 0;
    for (int p = 0; p < n_prim; p++) {
        int got = post_offsets[p + 1] - post_offsets[p], want = ref_offsets[p + 1] - ref_offsets[p];
        printf("primary %d: %d points (%d own + %d absorbed), expected %d (%d absorbed)\n", p, got,
               prim[p].npoints, got - prim[p].npoints, want, want - prim[p].npoints);
    }
    for (int p = 0; p <= n_prim; p++)
        if (post_offsets[p] != ref_offsets[p] && ++bad <= 10)
            printf("primary_offsets_post[%d] = %d, expected %d\n", p, post_offsets[p], ref_offsets[p]);
    for (int r = 0; r < rows; r++)
        if ((post_idxs[r * 2] != ref_idxs[r * 2] || post_idxs[r * 2 + 1] != ref_idxs[r * 2 + 1]) && ++bad <= 10)
            printf("primary_idxs_post[%d] = (%d, %d), expected (%d, %d)\n", r, post_idxs[r * 2],
                   post_idxs[r * 2 + 1], ref_idxs[r * 2], ref_idxs[r * 2 + 1]);
    if (bad) {
        printf("FAILED: %d mismatches\n", bad);
        return 1;
    }
    printf("ok: %d rows, offsets %d %d %d %d\n", rows, post_offsets[0], post_offsets[1], post_offsets[2],
           post_offsets[3]);
    return 0;
}
