#pragma once
// The Atlas's 3D positions: a spectral embedding of the affinity graph (viz/affinity.h), issue 12.
// Formulas and sources in docs/visualisation.md, "Atlas embedding".
//
// With W the symmetric affinity (n x n, sparse), the graph is first regularised by a weak uniform
// term, W_tau = W + (tau / n) 1 1^T with tau = kRegularisation * mean degree (Qin & Rohe 2013;
// Amini et al. 2013), so that disconnected parts and isolated experts still give one connected
// graph and a well-defined spectrum; W_tau is applied as sparse W plus a rank-one term, never
// stored. D = diag(W_tau 1) and M = D^-1/2 W_tau D^-1/2 (the normalised affinity; I - M is the
// normalised Laplacian of von Luxburg 2007). M's top eigenvector is D^1/2 1 (eigenvalue 1); it is
// projected out and the next three eigenvectors v_2, v_3, v_4 (largest algebraic eigenvalues) are
// computed with Spectra's Lanczos solver (SymEigsSolver) from a fixed start vector. Coordinates
// are the diffusion map at time 1 (Coifman & Lafon 2006): x_i = (l_2 f_2[i], l_3 f_3[i],
// l_4 f_4[i]) with f_k = D^-1/2 v_k the random-walk eigenvectors (Shi & Malik 2000) and l_k the
// eigenvalues, so an axis that separates the graph less is drawn shorter.
//
// Sign convention: each axis is flipped so that its component of largest magnitude is positive
// (ties: the lowest index). Then the point cloud is centred on its bounding box and scaled by one
// factor so that it spans [-1, 1] along its longest axis (a unit box, proportions kept).
//
// Determinism: Eigen is built without its own threading (EIGEN_DONT_PARALLELIZE), the start
// vector is fixed and every sum runs in one order, so the same graph gives the same bytes whatever
// OMP_NUM_THREADS is. Cost: O(iterations * (nnz + n)) time, O(nnz + n * kLanczosVectors) memory.
#include "engine/core/status.h"
#include "viz/affinity.h"

#include <vector>

namespace coli::viz {

inline constexpr double kRegularisation = 0.01; // tau / mean degree
inline constexpr int kLanczosVectors = 24;      // Spectra's ncv (at most n - 1)
inline constexpr int kMaxIterations = 3000;     // Spectra's restarts
inline constexpr double kTolerance = 1e-12;     // relative, on the Ritz values

struct Embedding {
    int n = 0;
    std::vector<double> xyz;        // [n, 3] row-major, each coordinate in [-1, 1]
    std::vector<double> eigenvalue; // [3]: the eigenvalues of M for the three axes, descending
    int iterations = 0;             // Spectra's restarts used
};

// Embeds graph g in 3D. Errors: InvalidArgument for a graph of fewer than 5 experts or with
// negative, non-finite or asymmetric weights (the message names the pair); Numeric when the
// eigensolver does not converge (the message says how many of the three eigenvectors did and
// after how many restarts). Never aborts.
// Thread-safety: a pure function; concurrent calls are safe.
Result<Embedding> embed3d(const AffinityGraph& g);

} // namespace coli::viz
