// Exhibit's driver for the corpus (not upstream code): Gpufit's C interface gpufit() on 500
// one-dimensional Gaussian peaks (GAUSS_1D, 32 points each, LSE) with known true parameters
// (amplitude 10, center 15.5, width 3, offset 1) and Gaussian noise (sigma 0.3), from rough
// initial guesses, before the fix "initialization of n_iterations_".
//
// Two calls, as a user checks a fit: (1) fit from the rough guesses; (2) refit the same data
// started at the fitted parameters of (1): a fit started at its own result must stop at once
// (its first step changes chi-square by less than the last step of (1) did, already below the
// tolerance), so it reports 1 iteration (2 allowed). Each call checks: every fit converged,
// the fitted parameters are near the true ones, and 1 <= n_iterations <= max_n_iterations
// (and <= 2 for the refit). Exit 1 on any failure.
#include "Gpufit/gpufit.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

static const size_t n_fits = 500, n_points = 32, n_parameters = 4;
static const REAL true_parameters[n_parameters] = {10.f, 15.5f, 3.f, 1.f};  // amplitude, center, width, offset
static const REAL parameter_bounds[n_parameters] = {1.f, 0.5f, 0.5f, 0.5f};  // about 5 standard errors
static const char *parameter_names[n_parameters] = {"amplitude", "center", "width", "offset"};

struct Result {
    std::vector<REAL> parameters;
    std::vector<int> states, n_iterations;
    std::vector<REAL> chi_squares;
};

static bool run(const char *name, std::vector<REAL> &data, std::vector<REAL> initial, int max_n_iterations,
                int max_expected_iterations, Result &r) {
    REAL const tolerance = 1e-4f;
    std::vector<int> parameters_to_fit(n_parameters, 1);
    r.parameters.assign(n_fits * n_parameters, 0);
    r.states.assign(n_fits, -1);
    r.chi_squares.assign(n_fits, 0);
    r.n_iterations.assign(n_fits, -1);
    int const status = gpufit(n_fits, n_points, data.data(), nullptr, GAUSS_1D, initial.data(), tolerance,
                              max_n_iterations, parameters_to_fit.data(), LSE, 0, nullptr, r.parameters.data(),
                              r.states.data(), r.chi_squares.data(), r.n_iterations.data());
    if (status != ReturnState::OK) {
        printf("%s: gpufit failed: %s\n", name, gpufit_get_last_error());
        return false;
    }

    int n_converged = 0, it_min = 1 << 30, it_max = -(1 << 30);
    double it_sum = 0;
    for (size_t i = 0; i < n_fits; i++) {
        n_converged += r.states[i] == CONVERGED;
        it_min = std::min(it_min, r.n_iterations[i]);
        it_max = std::max(it_max, r.n_iterations[i]);
        it_sum += r.n_iterations[i];
    }
    printf("%s: %d/%zu converged, n_iterations min %d max %d mean %.2f (max_n_iterations %d)\n", name, n_converged,
           n_fits, it_min, it_max, it_sum / n_fits, max_n_iterations);

    int bad = 0;
    for (size_t i = 0; i < n_fits; i++) {
        if (r.states[i] != CONVERGED && ++bad <= 10)
            printf("%s: fit %zu: state %d, expected %d (converged)\n", name, i, r.states[i], (int)CONVERGED);
        for (size_t p = 0; p < n_parameters; p++) {
            REAL const got = r.parameters[i * n_parameters + p];
            if (!(std::fabs(got - true_parameters[p]) <= parameter_bounds[p]) && ++bad <= 10)
                printf("%s: fit %zu: %s = %g, expected %g +- %g\n", name, i, parameter_names[p], got,
                       true_parameters[p], parameter_bounds[p]);
        }
        if ((r.n_iterations[i] < 1 || r.n_iterations[i] > max_expected_iterations) && ++bad <= 10)
            printf("%s: fit %zu: n_iterations = %d, expected 1 to %d\n", name, i, r.n_iterations[i],
                   max_expected_iterations);
    }
    if (bad) printf("%s: FAILED: %d mismatches\n", name, bad);
    return bad == 0;
}

int main() {
    std::mt19937 rng(0);
    std::uniform_real_distribution<REAL> uniform(0, 1);
    std::normal_distribution<REAL> noise(0, 0.3f);

    std::vector<REAL> data(n_fits * n_points);
    for (size_t i = 0; i < n_fits; i++)
        for (size_t k = 0; k < n_points; k++) {
            REAL const x = (REAL)k, a = true_parameters[0], x0 = true_parameters[1], s = true_parameters[2],
                       b = true_parameters[3];
            data[i * n_points + k] = a * std::exp(-(x - x0) * (x - x0) / (2 * s * s)) + b + noise(rng);
        }

    // Rough guesses: amplitude and width within -30%..+40%, center within 2 points, offset 0.5 to 1.5.
    std::vector<REAL> initial(n_fits * n_parameters);
    for (size_t i = 0; i < n_fits; i++) {
        initial[i * n_parameters + 0] = true_parameters[0] * (0.7f + 0.7f * uniform(rng));
        initial[i * n_parameters + 1] = true_parameters[1] - 2.f + 4.f * uniform(rng);
        initial[i * n_parameters + 2] = true_parameters[2] * (0.7f + 0.7f * uniform(rng));
        initial[i * n_parameters + 3] = 0.5f + uniform(rng);
    }

    Result fit, refit;
    bool ok = run("fit", data, initial, 50, 50, fit);
    ok = run("refit", data, fit.parameters, 50, 2, refit) && ok;
    printf(ok ? "ok\n" : "FAILED\n");
    return ok ? 0 : 1;
}
