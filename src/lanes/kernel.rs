//! Kernels: the code that runs a compression function over the blocks of every lane at once.
//!
//! Every algorithm of the Merkle–Damgård family has a portable kernel (RustCrypto's block
//! function, one lane after another); some have SIMD kernels, which exist as [`Kernel`] values
//! only on CPUs that run them. This module is the one place that knows the SIMD kernels: their
//! table ([`SIMD`]: lanes, names, CPU features, the function to call), which the lane set
//! runs and the tests (`kernel_tests.rs`) check row by row.

use std::fmt;
use std::sync::OnceLock;

use super::MAX_LANES;
use super::family::{Family, StatesMut};
use super::isa::Isa;
use super::simd::half_width_512;
#[cfg(target_arch = "x86_64")]
use super::{
    md5_avx2, md5_avx512, sha1_avx2, sha1_ni, sha256_avx2, sha256_avx512, sha256_ni, sha512_avx2,
    sha512_avx512,
};
use crate::algorithm::Algorithm;

/// The algorithms that lane sets hash, with the lane count and the name of their portable
/// kernel. The lane count is that of the algorithm's SIMD kernel, so that scheduling, and
/// what the tests exercise, is the same on every CPU.
const PORTABLE: [(Algorithm, usize, &str); 6] = [
    (Algorithm::Md5, 32, "md5-portable"),
    (Algorithm::Sha1, 8, "sha1-portable"),
    (Algorithm::Sha224, 16, "sha224-portable"),
    (Algorithm::Sha256, 16, "sha256-portable"),
    (Algorithm::Sha384, 16, "sha384-portable"),
    (Algorithm::Sha512, 16, "sha512-portable"),
];

/// A kernel for one algorithm. A value exists only for kernels this CPU runs: the constructors
/// check the CPU's features, which is what makes calling the SIMD kernels sound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Kernel {
    alg: Algorithm,
    /// `None` for the portable kernel.
    simd: Option<Simd>,
    /// The kernel's [`Spec::fewer`], if the CPU and the cap it was chosen under allow it.
    fewer: Option<Simd>,
}

/// The SIMD kernels. Adding one takes a variant here and its row in [`SIMD`]: lanes, names,
/// the CPU features it needs and the function it runs, which for a kernel of four SHA-256
/// lanes is `run!(Sha256, sha256_ni::compress::<4>)`. The row is all the tests need too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Simd {
    /// MD5, two groups of sixteen 32-bit lanes in 512-bit registers, interleaved step by step:
    /// AVX-512's rotate and three-input logic make a step about half the instructions of
    /// AVX2's (one Zen 4 core: 9.2 GB/s, 12 × one OpenSSL stream, 1.2 × the AVX2 lanes; Zen 5:
    /// 14.9 GB/s, 2.6 × the AVX2 lanes; `docs/performance.md`, "Multi-buffer kernels"). On AMD
    /// Zen 4 a call of 32 blocks or more runs the two groups one after the other instead
    /// (`md5_avx512::SPLIT_BLOCKS`).
    #[cfg(target_arch = "x86_64")]
    Md5Avx512,
    /// MD5, one group of sixteen lanes: what the two-group kernel runs for up to sixteen busy
    /// lanes (8.7 GB/s on sixteen messages on Zen 4, where the two-group kernel would give
    /// half of its 9.2).
    #[cfg(target_arch = "x86_64")]
    Md5Avx512Half,
    /// MD5, two groups of eight 32-bit lanes interleaved step by step.
    #[cfg(target_arch = "x86_64")]
    Md5Avx2,
    /// MD5, one group of eight lanes: what [`Simd::Md5Avx2`] runs for up to eight busy lanes
    /// (on Zen 5 4 % faster than the two groups with one idle; where the vector ALUs take one
    /// cycle, as on CPUs with AVX2 only, the second group costs more).
    #[cfg(target_arch = "x86_64")]
    Md5Avx2Single,
    /// SHA-224/256, sixteen 32-bit lanes per 512-bit register with AVX-512's rotate and
    /// three-input logic: 6.0 GB/s on one Zen 5 core, 1.8 × [`Simd::Sha256Ni2`] and 2.75 ×
    /// one SHA-NI stream. With eight busy lanes or fewer it runs those, packed, in pairs on
    /// [`Simd::Sha256Ni2`] where the CPU has SHA-NI (as fast as half of its own width).
    #[cfg(target_arch = "x86_64")]
    Sha256Avx512,
    /// SHA-224/256, two SHA-NI streams interleaved instruction by instruction. One stream is
    /// bound by the latency of `sha256rnds2`; two fill it (1.97 × one stream, where three
    /// gain 4 % more and four spill registers: the SHA instructions reach only 16 xmm).
    #[cfg(target_arch = "x86_64")]
    Sha256Ni2,
    /// SHA-1, four SHA-NI streams interleaved (2.45 × one stream; `sha1rnds4` has a longer
    /// latency than `sha256rnds2`, so more streams pay).
    #[cfg(target_arch = "x86_64")]
    Sha1Ni4,
    /// SHA-1, two SHA-NI streams (1.77 × one stream): what [`Simd::Sha1Ni4`] runs for up to
    /// two busy lanes.
    #[cfg(target_arch = "x86_64")]
    Sha1Ni2,
    /// SHA-224/256, eight 32-bit lanes per AVX2 register, for CPUs without SHA-NI: 1.8 GB/s on
    /// one Zen 4 core, as much as one SHA-NI stream and 0.53 × [`Simd::Sha256Ni2`], which is
    /// why it comes after it. Bound by the instruction count (35 a round, 12 of them the
    /// shifts of the rotations).
    #[cfg(target_arch = "x86_64")]
    Sha256Avx2,
    /// SHA-1, eight 32-bit lanes per AVX2 register, for CPUs without SHA-NI: 3.5 GB/s on one
    /// Zen 4 core, 1.8 × one SHA-NI stream but 0.74 × [`Simd::Sha1Ni4`].
    #[cfg(target_arch = "x86_64")]
    Sha1Avx2,
    /// SHA-384/512, two groups of eight 64-bit lanes in 512-bit registers, with AVX-512's
    /// rotate and three-input logic: where 512-bit instructions run at the rate of 256-bit
    /// ones (AMD Zen 5), twice the work per instruction of [`Simd::Sha512Avx512`].
    #[cfg(target_arch = "x86_64")]
    Sha512Avx512Zmm,
    /// SHA-384/512, one group of eight lanes in 512-bit registers: what
    /// [`Simd::Sha512Avx512Zmm`] runs for up to eight busy lanes (4.6 GB/s on one Zen 5 core).
    #[cfg(target_arch = "x86_64")]
    Sha512Avx512ZmmHalf,
    /// SHA-384/512, two groups of four 64-bit lanes in 256-bit registers with AVX-512VL's
    /// one-instruction rotate and three-input logic: a round takes 17 instructions instead of
    /// AVX2's 35 (3.5 × one OpenSSL stream; the second group fills the gaps of the first's
    /// chain of rounds, and one 512-bit register of eight lanes was 4 % slower on Zen 4).
    #[cfg(target_arch = "x86_64")]
    Sha512Avx512,
    /// SHA-384/512, one group of four lanes with AVX-512VL (2.9 × one OpenSSL stream): what
    /// [`Simd::Sha512Avx512`] runs for up to four busy lanes.
    #[cfg(target_arch = "x86_64")]
    Sha512Avx512Half,
    /// SHA-384/512, four 64-bit lanes per AVX2 register, two groups, Σ0 and Σ1 as carry-less
    /// products (VPCLMULQDQ, which AMD Zen 3 and Intel Alder Lake have without AVX-512): 6 %
    /// faster than [`Simd::Sha512Avx2`] on Zen 5.
    #[cfg(target_arch = "x86_64")]
    Sha512Avx2Clmul,
    /// SHA-384/512, one group of four lanes with the carry-less products: what
    /// [`Simd::Sha512Avx2Clmul`] runs for up to four busy lanes.
    #[cfg(target_arch = "x86_64")]
    Sha512Avx2ClmulHalf,
    /// SHA-384/512, four 64-bit lanes per AVX2 register, two groups (1.8 × one OpenSSL
    /// stream; the second group gains under 1 % on Zen 4, where the ALUs are full, and 13 % on
    /// Zen 5, whose vector additions and logic take 2 cycles; eight lanes like the AVX-512
    /// kernel).
    #[cfg(target_arch = "x86_64")]
    Sha512Avx2,
    /// SHA-384/512, one group of four lanes in AVX2: what [`Simd::Sha512Avx2`] runs for up to
    /// four busy lanes.
    #[cfg(target_arch = "x86_64")]
    Sha512Avx2Half,
}

/// What the lane set knows of a SIMD kernel.
pub(super) struct Spec {
    simd: Simd,
    /// The instruction sets it is compiled for, which [`SIMD_VAR`](super::SIMD_VAR) may
    /// rule out.
    pub(super) needs: Isa,
    /// The algorithms it hashes, with the kernel's name for each.
    pub(super) names: &'static [(Algorithm, &'static str)],
    /// Messages hashed at once: the `N` its `compress` takes.
    pub(super) lanes: usize,
    /// Whether this CPU has every instruction set the kernel is compiled for: calling the
    /// kernel is sound only where this returns `true`.
    pub(super) runs: fn() -> bool,
    /// The kernel itself.
    pub(super) run: Run,
    /// Whether [`Kernel::multi_buffer`] may choose it.
    chosen: Chosen,
    /// The narrower kernel that hashes the busy lanes instead, packed side by side, when few
    /// of them are busy: a set that is half full (a file of few leaves per worker, the last
    /// messages of a run) then costs what its messages need, not what the whole width does.
    fewer: Option<Fewer>,
}

/// Whether [`Kernel::multi_buffer`] may choose a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chosen {
    Yes,
    /// Never: it exists to be measured, or to stand in as another kernel's `fewer`.
    No,
    /// Except on a CPU that runs 512-bit vector instructions as two 256-bit halves (AMD
    /// Zen 4, [`half_width_512`]), where the next kernel of the table is faster. SHA-256 in
    /// sixteen AVX-512 lanes against two SHA-NI streams there (one 2-vCPU EPYC, family 0x19
    /// model 0x11, 1 MiB of data in cache): 3.2 against 3.4–3.5 GB/s on 64 KiB messages,
    /// 2.9–3.1 against 3.0–3.3 on 4 KiB, even on 1 KiB; CPU time of `mtsum -p 1 -a sha256`
    /// with `-t rfc6962` (1 GiB, median of 5 alternating runs): 848 against 768 ms at 1 KiB
    /// leaves, 598 against 574 at 4 KiB, 704 against 556 at 64 KiB, the default layout
    /// level. On Zen 5 the AVX-512 kernel is 1.8 × the SHA-NI pair ([`Simd::Sha256Avx512`]).
    UnlessHalfWidth512,
}

impl Chosen {
    /// Whether the kernel may be chosen on this CPU.
    fn here(self) -> bool {
        match self {
            Chosen::Yes => true,
            Chosen::No => false,
            Chosen::UnlessHalfWidth512 => !half_width_512(),
        }
    }
}

/// When a kernel hands its busy lanes to a narrower one ([`Spec::fewer`]).
#[derive(Clone, Copy)]
struct Fewer {
    kernel: Simd,
    /// The most busy lanes for which the narrower kernel, run over them in groups of its
    /// width, takes less time than this one.
    at_most: usize,
    /// Whether a round of all this kernel's lanes costs less CPU time per lane than the
    /// narrower kernel's rounds: then, where the cores are busy, a file's leaves stay with
    /// one reader to fill every lane ([`Kernel::keeps_lanes`]). Only where measured.
    keeps: bool,
}

/// A SIMD kernel as the lane set calls it: `blocks` blocks of every lane's data (one slice per
/// lane) through its state, for exactly as many lanes as the kernel's row says, in the state
/// type of the kernel's compression function.
///
/// # Panics
/// If a lane has less than `blocks` blocks of data: the kernel checks before it reads. If
/// the states are of another compression function or another number of lanes.
///
/// # Safety
/// The CPU runs the kernel: its row's [`Spec::runs`] returned `true`.
pub(super) type Run = unsafe fn(StatesMut<'_>, &[&[u8]], usize);

/// The [`Run`] of `$compress`, a kernel of the compression function `$family` (a variant of
/// [`StatesMut`]) with the signature every kernel has,
/// `unsafe fn(&mut [State; N], &[&[u8]; N], blocks: usize)`, which checks the data's length.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_macros))]
macro_rules! run {
    ($family:ident, $compress:expr) => {
        |states, data, blocks| match states {
            $crate::lanes::family::StatesMut::$family(states) => {
                let states = $crate::lanes::kernel::lanes_mut(states);
                let data = $crate::lanes::kernel::lanes(data);
                // SAFETY: the caller's guarantee, that the CPU runs the kernel, is the
                // kernel's precondition; the kernel checks the length of the data itself.
                unsafe { $compress(states, data, blocks) }
            }
            _ => unreachable!("a kernel of another compression function"),
        }
    };
}
/// For the tests' rows of kernel widths that only the benchmarks run.
#[cfg(all(test, target_arch = "x86_64"))]
pub(super) use run;

/// Every SIMD kernel; for each algorithm, the one [`Kernel::multi_buffer`] prefers first.
#[cfg(target_arch = "x86_64")]
pub(super) const SIMD: &[Spec] = &[
    Spec {
        simd: Simd::Md5Avx512,
        needs: Isa::AVX512,
        names: &[(Algorithm::Md5, "md5-avx512-16x2")],
        lanes: 32,
        runs: md5_avx512::supported,
        run: run!(Md5, md5_avx512::compress::<32>),
        chosen: Chosen::Yes,
        fewer: Some(Fewer {
            kernel: Simd::Md5Avx512Half,
            at_most: 16,
            keeps: false,
        }),
    },
    Spec {
        simd: Simd::Md5Avx512Half,
        needs: Isa::AVX512,
        names: &[(Algorithm::Md5, "md5-avx512-16x1")],
        lanes: 16,
        runs: md5_avx512::supported,
        run: run!(Md5, md5_avx512::compress::<16>),
        chosen: Chosen::No,
        fewer: None,
    },
    Spec {
        simd: Simd::Md5Avx2,
        needs: Isa::AVX2,
        names: &[(Algorithm::Md5, "md5-avx2-8x2")],
        lanes: 16,
        runs: md5_avx2::supported,
        run: run!(Md5, md5_avx2::compress::<16>),
        chosen: Chosen::Yes,
        fewer: Some(Fewer {
            kernel: Simd::Md5Avx2Single,
            at_most: 8,
            // Two groups of eight interleaved run 16 lanes in 1.3 rounds of one group (7.56
            // against 4.90 GB/s, `cargo bench --bench md5_avx2`, Zen 4 under the AVX2 cap).
            keeps: true,
        }),
    },
    Spec {
        simd: Simd::Md5Avx2Single,
        needs: Isa::AVX2,
        names: &[(Algorithm::Md5, "md5-avx2-8x1")],
        lanes: 8,
        runs: md5_avx2::supported,
        run: run!(Md5, md5_avx2::compress::<8>),
        chosen: Chosen::No,
        fewer: None,
    },
    Spec {
        simd: Simd::Sha256Avx512,
        needs: Isa::AVX512,
        names: &[
            (Algorithm::Sha224, "sha224-avx512-16"),
            (Algorithm::Sha256, "sha256-avx512-16"),
        ],
        lanes: 16,
        runs: sha256_avx512::supported,
        run: run!(Sha256, sha256_avx512::compress::<16>),
        chosen: Chosen::UnlessHalfWidth512,
        fewer: Some(Fewer {
            kernel: Simd::Sha256Ni2,
            at_most: 8,
            keeps: false,
        }),
    },
    Spec {
        simd: Simd::Sha256Ni2,
        needs: Isa::SHA_NI,
        names: &[
            (Algorithm::Sha224, "sha224-ni-x2"),
            (Algorithm::Sha256, "sha256-ni-x2"),
        ],
        lanes: 2,
        runs: sha256_ni::supported,
        run: run!(Sha256, sha256_ni::compress::<2>),
        chosen: Chosen::Yes,
        fewer: None,
    },
    Spec {
        simd: Simd::Sha256Avx2,
        needs: Isa::AVX2,
        names: &[
            (Algorithm::Sha224, "sha224-avx2-8"),
            (Algorithm::Sha256, "sha256-avx2-8"),
        ],
        lanes: 8,
        runs: sha256_avx2::supported,
        run: run!(Sha256, sha256_avx2::compress::<8>),
        chosen: Chosen::Yes,
        fewer: None,
    },
    Spec {
        simd: Simd::Sha1Ni4,
        needs: Isa::SHA_NI,
        names: &[(Algorithm::Sha1, "sha1-ni-x4")],
        lanes: 4,
        runs: sha1_ni::supported,
        run: run!(Sha1, sha1_ni::compress::<4>),
        chosen: Chosen::Yes,
        fewer: Some(Fewer {
            kernel: Simd::Sha1Ni2,
            at_most: 2,
            keeps: false,
        }),
    },
    Spec {
        simd: Simd::Sha1Avx2,
        needs: Isa::AVX2,
        names: &[(Algorithm::Sha1, "sha1-avx2-8")],
        lanes: 8,
        runs: sha1_avx2::supported,
        run: run!(Sha1, sha1_avx2::compress::<8>),
        chosen: Chosen::Yes,
        fewer: None,
    },
    Spec {
        simd: Simd::Sha512Avx512Zmm,
        needs: Isa::AVX512,
        names: &[
            (Algorithm::Sha384, "sha384-avx512-8x2"),
            (Algorithm::Sha512, "sha512-avx512-8x2"),
        ],
        lanes: 16,
        runs: sha512_avx512::supported_zmm,
        run: run!(Sha512, sha512_avx512::compress_zmm::<16>),
        chosen: Chosen::Yes,
        fewer: Some(Fewer {
            kernel: Simd::Sha512Avx512ZmmHalf,
            at_most: 8,
            keeps: false,
        }),
    },
    Spec {
        simd: Simd::Sha512Avx512ZmmHalf,
        needs: Isa::AVX512,
        names: &[
            (Algorithm::Sha384, "sha384-avx512-8x1"),
            (Algorithm::Sha512, "sha512-avx512-8x1"),
        ],
        lanes: 8,
        runs: sha512_avx512::supported_zmm,
        run: run!(Sha512, sha512_avx512::compress_zmm::<8>),
        chosen: Chosen::No,
        fewer: None,
    },
    Spec {
        simd: Simd::Sha512Avx512,
        needs: Isa::AVX512,
        names: &[
            (Algorithm::Sha384, "sha384-avx512vl-4x2"),
            (Algorithm::Sha512, "sha512-avx512vl-4x2"),
        ],
        lanes: 8,
        runs: sha512_avx512::supported,
        run: run!(Sha512, sha512_avx512::compress::<8>),
        chosen: Chosen::Yes,
        fewer: Some(Fewer {
            kernel: Simd::Sha512Avx512Half,
            at_most: 4,
            keeps: false,
        }),
    },
    Spec {
        simd: Simd::Sha1Ni2,
        needs: Isa::SHA_NI,
        names: &[(Algorithm::Sha1, "sha1-ni-x2")],
        lanes: 2,
        runs: sha1_ni::supported,
        run: run!(Sha1, sha1_ni::compress::<2>),
        chosen: Chosen::No,
        fewer: None,
    },
    Spec {
        simd: Simd::Sha512Avx512Half,
        needs: Isa::AVX512,
        names: &[
            (Algorithm::Sha384, "sha384-avx512vl-4x1"),
            (Algorithm::Sha512, "sha512-avx512vl-4x1"),
        ],
        lanes: 4,
        runs: sha512_avx512::supported,
        run: run!(Sha512, sha512_avx512::compress::<4>),
        chosen: Chosen::No,
        fewer: None,
    },
    Spec {
        simd: Simd::Sha512Avx2Clmul,
        needs: Isa::AVX2,
        names: &[
            (Algorithm::Sha384, "sha384-avx2-clmul-4x2"),
            (Algorithm::Sha512, "sha512-avx2-clmul-4x2"),
        ],
        lanes: 8,
        runs: sha512_avx2::supported_clmul,
        run: run!(Sha512, sha512_avx2::compress_clmul::<8>),
        chosen: Chosen::Yes,
        fewer: Some(Fewer {
            kernel: Simd::Sha512Avx2ClmulHalf,
            at_most: 4,
            keeps: false,
        }),
    },
    Spec {
        simd: Simd::Sha512Avx2ClmulHalf,
        needs: Isa::AVX2,
        names: &[
            (Algorithm::Sha384, "sha384-avx2-clmul-4x1"),
            (Algorithm::Sha512, "sha512-avx2-clmul-4x1"),
        ],
        lanes: 4,
        runs: sha512_avx2::supported_clmul,
        run: run!(Sha512, sha512_avx2::compress_clmul::<4>),
        chosen: Chosen::No,
        fewer: None,
    },
    Spec {
        simd: Simd::Sha512Avx2,
        needs: Isa::AVX2,
        names: &[
            (Algorithm::Sha384, "sha384-avx2-4x2"),
            (Algorithm::Sha512, "sha512-avx2-4x2"),
        ],
        lanes: 8,
        runs: sha512_avx2::supported,
        run: run!(Sha512, sha512_avx2::compress::<8>),
        chosen: Chosen::Yes,
        fewer: Some(Fewer {
            kernel: Simd::Sha512Avx2Half,
            at_most: 4,
            keeps: false,
        }),
    },
    Spec {
        simd: Simd::Sha512Avx2Half,
        needs: Isa::AVX2,
        names: &[
            (Algorithm::Sha384, "sha384-avx2-4x1"),
            (Algorithm::Sha512, "sha512-avx2-4x1"),
        ],
        lanes: 4,
        runs: sha512_avx2::supported,
        run: run!(Sha512, sha512_avx2::compress::<4>),
        chosen: Chosen::No,
        fewer: None,
    },
];
#[cfg(not(target_arch = "x86_64"))]
pub(super) const SIMD: &[Spec] = &[];

/// The lanes' data as the array a kernel of `N` lanes takes.
///
/// # Panics
/// If the kernel's row in [`SIMD`] says another number of lanes than its `compress` takes.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) fn lanes<T, const N: usize>(lanes: &[T]) -> &[T; N] {
    lanes
        .try_into()
        .expect("a kernel takes the lanes its row says")
}

/// The lanes' states as the array a kernel of `N` lanes takes.
///
/// # Panics
/// As [`lanes`].
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) fn lanes_mut<T, const N: usize>(lanes: &mut [T]) -> &mut [T; N] {
    lanes
        .try_into()
        .expect("a kernel takes the lanes its row says")
}

impl Spec {
    fn of(simd: Simd) -> &'static Spec {
        SIMD.iter()
            .find(|s| s.simd == simd)
            .expect("every SIMD kernel has a row in the table")
    }

    fn name(&self, alg: Algorithm) -> Option<&'static str> {
        self.names.iter().find(|(a, _)| *a == alg).map(|(_, n)| *n)
    }

    /// Whether this CPU runs the kernel and the cap allows it.
    fn usable(&self, cap: Isa) -> bool {
        self.needs.within(cap) && (self.runs)()
    }

    /// This kernel for `alg`, with its `fewer` if usable under `cap`.
    ///
    /// # Panics
    /// If this CPU does not run the kernel: a [`Kernel`] must exist only for those it runs.
    fn kernel(&self, alg: Algorithm, cap: Isa) -> Kernel {
        assert!((self.runs)(), "the CPU runs {:?}", self.simd);
        let fewer = self.fewer.map(|f| f.kernel);
        Kernel {
            alg,
            simd: Some(self.simd),
            fewer: fewer.filter(|&f| Spec::of(f).usable(cap)),
        }
    }
}

impl Kernel {
    /// The fastest multi-buffer kernel for `alg` on this CPU, chosen once per process among
    /// those within the cap of [`Isa::cap`]; `None` if `alg` has only its portable
    /// kernel here (no faster than one stream), if the cap is [`Isa::PORTABLE`], or if the cap
    /// is not a valid name (the `mtsum` command refuses to start with one).
    pub fn multi_buffer(alg: Algorithm) -> Option<Kernel> {
        static CHOSEN: OnceLock<[Option<Kernel>; Algorithm::ALL.len()]> = OnceLock::new();
        let chosen = CHOSEN.get_or_init(|| {
            let cap = Isa::cap();
            Algorithm::ALL.map(|alg| Kernel::choose(alg, cap))
        });
        let index = Algorithm::ALL.iter().position(|&a| a == alg);
        chosen[index.expect("every algorithm is in Algorithm::ALL")]
    }

    /// The choice of [`Kernel::multi_buffer`] under the cap `cap`: the first kernel of the
    /// table that may be chosen, that the cap allows and that the CPU runs.
    pub fn choose(alg: Algorithm, cap: Isa) -> Option<Kernel> {
        SIMD.iter()
            .find(|s| s.chosen.here() && s.name(alg).is_some() && s.usable(cap))
            .map(|s| s.kernel(alg, cap))
    }

    /// The portable kernel of `alg`: RustCrypto's block function, one lane after another. Runs
    /// anywhere, no faster than one stream. `None` for the algorithms that are not
    /// Merkle–Damgård (BLAKE3, XXH3).
    pub fn portable(alg: Algorithm) -> Option<Kernel> {
        PORTABLE.iter().any(|&(a, ..)| a == alg).then_some(Kernel {
            alg,
            simd: None,
            fewer: None,
        })
    }

    /// Every kernel of `alg` this CPU runs, portable first: for tests and benchmarks.
    pub fn available(alg: Algorithm) -> Vec<Kernel> {
        let simd = SIMD
            .iter()
            .filter(|s| s.name(alg).is_some() && s.usable(Isa::ALL))
            .map(|s| s.kernel(alg, Isa::ALL));
        Kernel::portable(alg).into_iter().chain(simd).collect()
    }

    /// The algorithm this kernel hashes.
    pub fn algorithm(self) -> Algorithm {
        self.alg
    }

    /// How many messages this kernel hashes at once.
    pub fn lanes(self) -> usize {
        match self.simd {
            Some(simd) => Spec::of(simd).lanes,
            None => {
                let row = PORTABLE.iter().find(|&&(a, ..)| a == self.alg);
                row.expect("a portable kernel").1
            }
        }
    }

    /// The fewest busy lanes that leave little of the kernel's work idle: the most it hands
    /// to its narrower kernel where it has one (16 of MD5's 32 in AVX-512, which its 16-lane
    /// group runs; 8 of SHA-256's 16, which pairs of SHA-NI streams run), all its lanes
    /// otherwise, and 1 for the portable kernel, which hashes one lane after another. A
    /// scheduler that fills lanes in multiples of this many wastes little on idle lanes.
    pub fn min_lanes(self) -> usize {
        let Some(spec) = self.simd.map(Spec::of) else {
            return 1;
        };
        match (self.fewer, spec.fewer) {
            (Some(_), Some(fewer)) => fewer.at_most,
            _ => spec.lanes,
        }
    }

    /// How long a round of `busy` lanes takes, in rounds of the kernel's narrower kernel
    /// (rounds of itself where it has none; one lane's block for the portable kernel, which
    /// hashes one lane after another): `busy` lanes in groups of the narrower width up to
    /// [`Spec::fewer`]'s `at_most`, beyond it one more than that, since the wide kernel takes
    /// longer than `at_most` lanes in groups and not longer than one group more.
    fn round_cost(self, busy: usize) -> usize {
        let Some(spec) = self.simd.map(Spec::of) else {
            return busy;
        };
        match (self.fewer.map(Spec::of), spec.fewer) {
            (Some(narrow), Some(fewer)) if busy <= fewer.at_most => busy.div_ceil(narrow.lanes),
            (Some(narrow), Some(fewer)) => fewer.at_most.div_ceil(narrow.lanes) + 1,
            _ => 1,
        }
    }

    /// How many of `messages` equal one-message jobs one reader should take into its lanes
    /// when `readers` readers (itself included) could hash them: a fair share when that makes
    /// the slowest reader at least a quarter faster than one reader with all of them, all of
    /// them otherwise. Eight 128 MiB SHA-256 leaves (a 1 GiB file) run on one reader through
    /// pairs of SHA-NI streams, four rounds of pairs, or on two readers in two rounds each:
    /// twice as fast for the same CPU. Sixteen MD5 leaves fill one 16-lane AVX-512 group,
    /// which eight would not run faster: one reader takes them, and half the CPU is spent.
    pub fn share(self, messages: usize, readers: usize) -> usize {
        let narrow = self.fewer.map_or(1, |simd| Spec::of(simd).lanes);
        let share = messages.div_ceil(readers.max(1)).next_multiple_of(narrow);
        if share < messages && 4 * self.round_cost(share) <= 3 * self.round_cost(messages) {
            share
        } else {
            messages
        }
    }

    /// Whether a round of all the lanes costs less CPU time per lane than the narrower
    /// kernel's rounds (MD5's two AVX2 groups of eight against one): where the cores are
    /// busy, a file's leaves then stay with one reader, filling every lane, rather than
    /// going to two readers' narrower kernels at a higher cost.
    pub fn keeps_lanes(self) -> bool {
        let fewer = self.simd.and_then(|simd| Spec::of(simd).fewer);
        self.fewer.is_some() && fewer.is_some_and(|f| f.keeps)
    }

    /// A short name: the algorithm, then the kernel (`md5-avx2-8x2`, `sha256-portable`).
    pub fn name(self) -> &'static str {
        let name = match self.simd {
            Some(simd) => Spec::of(simd).name(self.alg),
            None => PORTABLE
                .iter()
                .find(|&&(a, ..)| a == self.alg)
                .map(|&(.., name)| name),
        };
        name.expect("a kernel has a name for its algorithm")
    }

    /// Runs `blocks` blocks of every `Some` lane's data (at least `blocks` blocks each) through
    /// its state; `None` lanes keep their state. Lanes from [`Kernel::lanes`] on are `None`.
    pub(super) fn compress<F: Family>(
        self,
        states: &mut [F::State; MAX_LANES],
        data: &[Option<&[u8]>; MAX_LANES],
        blocks: usize,
    ) {
        let Some(simd) = self.simd else {
            for (state, data) in states.iter_mut().zip(data) {
                if let Some(data) = data {
                    compress_portable::<F>(state, data, blocks);
                }
            }
            return;
        };
        let spec = Spec::of(simd);
        let busy = data[..spec.lanes].iter().flatten().count();
        if busy == 0 {
            return;
        }
        if let Some(fewer) = self.fewer.map(Spec::of)
            && spec.fewer.is_some_and(|f| busy <= f.at_most)
        {
            return packed::<F>(fewer, states, data, blocks);
        }
        // A SIMD kernel hashes every lane: idle lanes compute on a busy lane's data (never out
        // of bounds, never a branch in the kernel) and get their state back afterwards.
        let Some(busy) = data.iter().flatten().next() else {
            return;
        };
        let full: [&[u8]; MAX_LANES] = std::array::from_fn(|lane| data[lane].unwrap_or(busy));
        // Saved only when a lane is idle: a copy of every state right after `start` wrote one
        // stalls on that store, which cost 64-byte messages a few per cent.
        let saved = data[..spec.lanes].contains(&None).then_some(*states);
        // SAFETY: a `Kernel` with `Some(simd)` is made only by `Spec::kernel`, which checks
        // that the CPU runs the kernel. The kernel checks that every lane has `blocks` blocks
        // before it reads them.
        unsafe {
            (spec.run)(
                F::view(&mut states[..spec.lanes]),
                &full[..spec.lanes],
                blocks,
            )
        };
        if let Some(saved) = saved {
            for ((state, saved), data) in states.iter_mut().zip(saved).zip(data) {
                if data.is_none() {
                    *state = saved;
                }
            }
        }
    }
}

/// A kernel looked up once for a run of calls in which every lane is busy: what
/// `lanes::hash_many` calls for each full group of messages of one length, without the table
/// lookup, the count of busy lanes and the copies of the data and the states that
/// [`Kernel::compress`] makes on each call for lanes that may be idle. For two SHA-NI lanes of
/// a tree's inner nodes, one block each, those are a good part of a call.
#[derive(Clone, Copy)]
pub(super) struct FullLanes {
    /// `None` for the portable kernel.
    run: Option<Run>,
    lanes: usize,
}

impl Kernel {
    /// This kernel, ready for [`FullLanes::compress`].
    pub(super) fn full_lanes(self) -> FullLanes {
        FullLanes {
            run: self.simd.map(|simd| Spec::of(simd).run),
            lanes: self.lanes(),
        }
    }
}

impl FullLanes {
    /// Runs `blocks` blocks of every lane's data (at least `blocks` blocks each) through its
    /// state: exactly [`Kernel::lanes`] of each.
    ///
    /// # Panics
    /// If there are not as many states and data as lanes, or a lane has too little data.
    pub(super) fn compress<F: Family>(
        self,
        states: &mut [F::State],
        data: &[&[u8]],
        blocks: usize,
    ) {
        assert!(
            states.len() == self.lanes && data.len() == self.lanes,
            "a state and data for every lane"
        );
        match self.run {
            // SAFETY: `run` is from a `Kernel`, which exists only for kernels the CPU runs; the
            // kernel checks the number of states and data and their length before it reads.
            Some(run) => unsafe { run(F::view(states), data, blocks) },
            None => {
                for (state, data) in states.iter_mut().zip(data) {
                    compress_portable::<F>(state, data, blocks);
                }
            }
        }
    }
}

/// The portable kernel on one lane: `blocks` blocks of `data` through `state`.
///
/// # Panics
/// If `data` has less than `blocks` blocks.
fn compress_portable<F: Family>(state: &mut F::State, data: &[u8], blocks: usize) {
    let len = blocks.checked_mul(F::BLOCK).expect("block count overflows");
    F::compress_portable(state, &data[..len]);
}

/// Runs the kernel `spec` over the busy lanes of `data` (at most [`MAX_LANES`]), packed side
/// by side in groups of its width: the last group fills its idle lanes with copies of its
/// first, whose results are dropped. The idle lanes' states are not touched.
///
/// The caller must have checked that the CPU runs the kernel: `spec` is a [`Kernel`]'s
/// `fewer`, which exists only if it does.
fn packed<F: Family>(
    spec: &Spec,
    states: &mut [F::State; MAX_LANES],
    data: &[Option<&[u8]>; MAX_LANES],
    blocks: usize,
) {
    let mut busy = [0; MAX_LANES];
    let mut count = 0;
    for (lane, _) in data.iter().enumerate().filter(|(_, d)| d.is_some()) {
        busy[count] = lane;
        count += 1;
    }
    for group in busy[..count].chunks(spec.lanes) {
        let lane = |i: usize| group[i % group.len()];
        let mut packed: [F::State; MAX_LANES] = std::array::from_fn(|i| states[lane(i)]);
        let lanes: [&[u8]; MAX_LANES] =
            std::array::from_fn(|i| data[lane(i)].expect("a busy lane has data"));
        // SAFETY: the CPU runs the kernel (the caller's guarantee); the kernel checks that
        // every lane has `blocks` blocks before it reads them.
        unsafe {
            (spec.run)(
                F::view(&mut packed[..spec.lanes]),
                &lanes[..spec.lanes],
                blocks,
            )
        };
        for (i, &lane) in group.iter().enumerate() {
            states[lane] = packed[i];
        }
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The family is read from CPUID's signature as AMD and Intel define it (the extended
    /// family added to a base family of 0xF).

    #[test]
    fn the_portable_cap_leaves_no_multi_buffer_kernel() {
        for alg in Algorithm::ALL {
            assert_eq!(Kernel::choose(alg, Isa::PORTABLE), None, "{alg}");
        }
    }

    #[test]
    fn the_chosen_kernel_is_the_first_chosen_simd_kernel_this_cpu_runs_within_the_cap() {
        let caps = ["portable", "avx2-nosha", "avx2", "avx512-nosha", "avx512"];
        for cap in caps.map(|c| c.parse::<Isa>().unwrap()) {
            for alg in Algorithm::ALL {
                let expected = Kernel::available(alg).into_iter().find(|k| {
                    k.simd
                        .is_some_and(|s| Spec::of(s).chosen.here() && Spec::of(s).needs.within(cap))
                });
                let chosen = Kernel::choose(alg, cap);
                assert_eq!(chosen.map(Kernel::name), expected.map(Kernel::name));
                // What it runs for few busy lanes is within the cap too.
                let fewer = chosen.and_then(|k| k.fewer).map(Spec::of);
                assert!(
                    fewer.is_none_or(|f| f.needs.within(cap)),
                    "{alg} under {cap}"
                );
            }
        }
    }

    /// On a CPU with AVX-512 the cap is what runs the AVX2 kernels in the program: each
    /// algorithm that has an AVX2 kernel gets it under `avx2-nosha`.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx2_cap_chooses_the_avx2_kernels_on_a_cpu_with_avx2() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return eprintln!("skipped: this CPU lacks AVX2");
        }
        let cap: Isa = "avx2-nosha".parse().unwrap();
        let sha512 = if sha512_avx2::supported_clmul() {
            "sha512-avx2-clmul-4x2"
        } else {
            "sha512-avx2-4x2"
        };
        for (alg, name) in [
            (Algorithm::Md5, "md5-avx2-8x2"),
            (Algorithm::Sha1, "sha1-avx2-8"),
            (Algorithm::Sha256, "sha256-avx2-8"),
            (Algorithm::Sha512, sha512),
        ] {
            assert_eq!(Kernel::choose(alg, cap).map(Kernel::name), Some(name));
        }
    }

    /// The kernel of `alg` named `name`, if this CPU runs it.
    fn named(alg: Algorithm, name: &str) -> Option<Kernel> {
        Kernel::available(alg)
            .into_iter()
            .find(|k| k.name() == name)
    }

    #[test]
    fn eight_sha256_leaves_are_shared_by_two_readers_where_pairs_of_sha_ni_streams_run_them() {
        let Some(k) = named(Algorithm::Sha256, "sha256-avx512-16").filter(|k| k.fewer.is_some())
        else {
            return eprintln!("skipped: this CPU lacks AVX-512 or SHA-NI");
        };
        assert_eq!(k.share(8, 2), 4);
        assert_eq!(k.share(8, 1), 8);
        // Sixteen fill the 16 lanes: eight each would be little faster and cost twice the CPU.
        assert_eq!(k.share(16, 2), 16);
    }

    #[test]
    fn sixteen_md5_leaves_stay_with_one_reader_whose_16_lane_group_runs_them_as_fast_as_eight() {
        let Some(k) = named(Algorithm::Md5, "md5-avx512-16x2").filter(|k| k.fewer.is_some()) else {
            return eprintln!("skipped: this CPU lacks AVX-512");
        };
        assert_eq!(k.share(16, 2), 16);
        assert_eq!(k.share(32, 2), 16);
        assert_eq!(k.share(3, 2), 3);
    }

    #[test]
    fn md5s_two_avx2_groups_keep_their_lanes_and_kernels_without_such_a_gain_do_not() {
        if let Some(k) = named(Algorithm::Md5, "md5-avx2-8x2").filter(|k| k.fewer.is_some()) {
            assert!(k.keeps_lanes());
        }
        for alg in Algorithm::ALL {
            for k in Kernel::available(alg) {
                assert_eq!(
                    k.keeps_lanes(),
                    k.name() == "md5-avx2-8x2" && k.fewer.is_some(),
                    "{k}"
                );
            }
        }
    }

    #[test]
    fn the_portable_kernel_shares_every_hand_since_it_hashes_one_lane_after_another() {
        for alg in Algorithm::ALL {
            if let Some(k) = Kernel::portable(alg) {
                assert_eq!(k.share(8, 2), 4, "{alg}");
                assert_eq!(k.share(7, 2), 4, "{alg}");
                assert_eq!(k.share(1, 2), 1, "{alg}");
                assert_eq!(k.share(8, 1), 8, "{alg}");
            }
        }
    }

    #[test]
    fn min_lanes_is_what_the_narrower_kernel_takes_where_there_is_one() {
        for alg in Algorithm::ALL {
            for k in Kernel::available(alg) {
                let min = k.min_lanes();
                assert!(min >= 1 && k.lanes().is_multiple_of(min), "{k}: {min}");
                let fewer = k.simd.and_then(|s| Spec::of(s).fewer);
                match (k.simd, k.fewer, fewer) {
                    (None, ..) => assert_eq!(min, 1, "{k}"),
                    (Some(_), Some(_), Some(fewer)) => assert_eq!(min, fewer.at_most, "{k}"),
                    (Some(_), ..) => assert_eq!(min, k.lanes(), "{k}"),
                }
            }
        }
    }

    #[test]
    fn every_kernel_names_its_algorithm_and_fits_a_lane_set() {
        for alg in Algorithm::ALL {
            let kernels = Kernel::available(alg);
            assert_eq!(kernels.first().copied(), Kernel::portable(alg));
            for k in kernels {
                assert_eq!(k.algorithm(), alg);
                assert!(k.name().starts_with(&format!("{alg}-")), "{k}");
                assert!((1..=MAX_LANES).contains(&k.lanes()), "{k}");
            }
        }
        assert!(Kernel::available(Algorithm::Blake3).is_empty());
        // The portable kernels have as many lanes as the widest kernel `multi_buffer` may
        // choose, and every other choice a whole fraction of them (AVX2's 16 MD5 lanes where
        // AVX-512 has 32), so that tests on any CPU exercise at least the widest scheduling.
        for spec in SIMD.iter().filter(|s| s.chosen != Chosen::No) {
            for &(alg, _) in spec.names {
                let portable = Kernel::portable(alg).unwrap().lanes();
                assert!(portable.is_multiple_of(spec.lanes), "{alg}: {}", spec.lanes);
            }
        }
        for alg in Algorithm::ALL
            .into_iter()
            .filter(|a| Kernel::portable(*a).is_some())
        {
            let widest = SIMD
                .iter()
                .filter(|s| s.chosen != Chosen::No && s.name(alg).is_some());
            let widest = widest.map(|s| s.lanes).max();
            assert_eq!(
                widest,
                Some(Kernel::portable(alg).unwrap().lanes()),
                "{alg}"
            );
        }
    }
}
