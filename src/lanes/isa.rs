//! Instruction sets: what a SIMD kernel is compiled for, and the cap that
//! [`SIMD_VAR`](SIMD_VAR) puts on the kernels [`Kernel::multi_buffer`](super::Kernel)
//! may choose.
//!
//! The cap exists because most machines that run mtsum have AVX2 but not AVX-512, and the
//! kernels they run (MD5 in eight lanes, SHA-512 in four) must be measurable, and usable by
//! whoever wants them, on a machine that has both. It only ever narrows the choice: a kernel
//! runs only where the CPU has its instructions, whatever the cap says.

use std::ffi::OsStr;
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

/// The environment variable that caps the instruction sets of the multi-buffer kernels and
/// of [`crate::batch`]'s BLAKE3 and XXH3 ([`Isa::cap`]): `portable`, `avx2`, `avx512` (the widest vector instructions
/// allowed; SHA-NI where the CPU has it) or `avx2-nosha`, `avx512-nosha` (no SHA-NI). Unset,
/// every kernel the CPU runs may be chosen. It runs the AVX2 kernels on a CPU with AVX-512,
/// to measure what most machines get. The digests never depend on it.
pub const SIMD_VAR: &str = "MTSUM_SIMD";

/// The environment variable that leaves every algorithm without a multi-buffer kernel
/// (any value but empty or `0`): the same as [`SIMD_VAR`]` = portable`, which it overrides.
pub const FORCE_PORTABLE_VAR: &str = "MTSUM_FORCE_PORTABLE";

/// The widest vector registers a kernel uses, in the order of their width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Vector {
    /// No SIMD kernel at all (the SHA-NI ones run on 128-bit registers of SSE, which every
    /// x86-64 CPU with SHA-NI has, so they need no more than this).
    None,
    /// 256-bit AVX2.
    Avx2,
    /// AVX-512 (512-bit registers, or AVX-512VL's instructions on 256-bit ones).
    Avx512,
}

impl fmt::Display for Vector {
    /// `portable`, `avx2`, `avx512`: the names [`SIMD_VAR`](super::SIMD_VAR) caps them with.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Vector::None => "portable",
            Vector::Avx2 => "avx2",
            Vector::Avx512 => "avx512",
        })
    }
}

/// A set of instruction sets: those a kernel needs, or those a cap allows. The vector width
/// and SHA-NI are apart because CPUs have every combination of them (Intel Haswell: AVX2
/// alone; AMD Zen 2: AVX2 and SHA-NI; Intel Skylake-SP: AVX-512 alone; AMD Zen 4: both).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Isa {
    pub vector: Vector,
    pub sha_ni: bool,
}

impl Isa {
    /// Every instruction set: no cap.
    pub const ALL: Isa = Isa {
        vector: Vector::Avx512,
        sha_ni: true,
    };
    /// No SIMD kernel: every message is one stream of the single-stream backend.
    pub const PORTABLE: Isa = Isa {
        vector: Vector::None,
        sha_ni: false,
    };
    /// What the AVX2 kernels need.
    pub(super) const AVX2: Isa = Isa {
        vector: Vector::Avx2,
        sha_ni: false,
    };
    /// What the AVX-512 kernels need.
    pub(super) const AVX512: Isa = Isa {
        vector: Vector::Avx512,
        sha_ni: false,
    };
    /// What the SHA-NI kernels need.
    pub(super) const SHA_NI: Isa = Isa {
        vector: Vector::None,
        sha_ni: true,
    };

    /// Whether a kernel that needs `self` may run under the cap `cap`.
    pub fn within(self, cap: Isa) -> bool {
        self.vector <= cap.vector && (!self.sha_ni || cap.sha_ni)
    }

    /// The cap of [`Isa::cap_from_env`], read once per process: what every SIMD kernel of
    /// mtsum (the lanes' and [`crate::batch`]'s) is chosen under. [`Isa::PORTABLE`] on a name
    /// it cannot read (the `mtsum` command refuses to start with one).
    pub fn cap() -> Isa {
        static CAP: OnceLock<Isa> = OnceLock::new();
        *CAP.get_or_init(|| Isa::cap_from_env().unwrap_or(Isa::PORTABLE))
    }

    /// The cap the environment sets: [`SIMD_VAR`](SIMD_VAR) (no cap when unset or
    /// empty), narrowed to [`Isa::PORTABLE`] by
    /// [`FORCE_PORTABLE_VAR`](FORCE_PORTABLE_VAR) (any value but empty or `0`).
    ///
    /// # Errors
    /// The message for a value of `MTSUM_SIMD` that is not one of [`Isa`]'s names.
    pub fn cap_from_env() -> Result<Isa, IsaError> {
        Isa::cap_from(
            std::env::var_os(SIMD_VAR).as_deref(),
            std::env::var_os(FORCE_PORTABLE_VAR).as_deref(),
        )
    }

    /// [`Isa::cap_from_env`] given the values of the two variables.
    fn cap_from(simd: Option<&OsStr>, force_portable: Option<&OsStr>) -> Result<Isa, IsaError> {
        let forced = force_portable.is_some_and(|v| !v.is_empty() && v != "0");
        let cap = match simd {
            None => Isa::ALL,
            Some(value) if value.is_empty() => Isa::ALL,
            Some(value) => value
                .to_str()
                .ok_or_else(|| IsaError(value.to_string_lossy().into_owned()))?
                .parse()?,
        };
        Ok(if forced { Isa::PORTABLE } else { cap })
    }
}

/// A name that is not an instruction-set cap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{var}: unknown instruction sets '{0}' (expected portable, avx2, avx512, or avx2-nosha, avx512-nosha)",
    var = SIMD_VAR
)]
pub struct IsaError(String);

/// The names of [`Isa`]: the widest vector instructions, then `-nosha` to leave out SHA-NI.
const NAMES: [(&str, Isa); 5] = [
    ("portable", Isa::PORTABLE),
    (
        "avx2",
        Isa {
            vector: Vector::Avx2,
            sha_ni: true,
        },
    ),
    ("avx2-nosha", Isa::AVX2),
    ("avx512", Isa::ALL),
    ("avx512-nosha", Isa::AVX512),
];

impl FromStr for Isa {
    type Err = IsaError;

    /// `portable`, `avx2`, `avx512` (SHA-NI allowed where the CPU has it), or `avx2-nosha`,
    /// `avx512-nosha` (SHA-NI left out), in any case.
    fn from_str(s: &str) -> Result<Isa, IsaError> {
        NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(s))
            .map(|&(_, isa)| isa)
            .ok_or_else(|| IsaError(s.to_owned()))
    }
}

impl fmt::Display for Isa {
    /// The name [`Isa::from_str`] reads back; a set without a name (SHA-NI alone) is shown
    /// as its parts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match NAMES.iter().find(|(_, isa)| isa == self) {
            Some((name, _)) => f.write_str(name),
            None => write!(f, "{:?}+sha-ni", self.vector),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_and_unknown_names_are_refused() {
        for (name, isa) in NAMES {
            assert_eq!(name.parse::<Isa>(), Ok(isa));
            assert_eq!(name.to_uppercase().parse::<Isa>(), Ok(isa));
            assert_eq!(isa.to_string(), name);
        }
        for bad in ["", "avx", "sse", "avx2 ", "avx-512"] {
            let err = bad.parse::<Isa>().unwrap_err().to_string();
            assert!(err.starts_with("MTSUM_SIMD: unknown"), "{err}");
        }
    }

    #[test]
    fn force_portable_is_the_portable_cap_for_any_value_but_empty_or_0() {
        let os = |v: &'static str| Some(OsStr::new(v));
        for value in ["1", "yes"] {
            assert_eq!(Isa::cap_from(None, os(value)), Ok(Isa::PORTABLE));
            assert_eq!(Isa::cap_from(os("avx2"), os(value)), Ok(Isa::PORTABLE));
        }
        for value in [None, os(""), os("0")] {
            assert_eq!(Isa::cap_from(None, value), Ok(Isa::ALL));
            assert_eq!(Isa::cap_from(os(""), value), Ok(Isa::ALL));
            assert_eq!(Isa::cap_from(os("avx2"), value), "avx2".parse());
        }
        assert!(Isa::cap_from(os("avx3"), os("0")).is_err());
    }

    #[test]
    fn a_cap_allows_the_narrower_sets_and_sha_ni_only_if_it_says_so() {
        let avx2: Isa = "avx2".parse().unwrap();
        assert!(Isa::AVX2.within(avx2) && Isa::SHA_NI.within(avx2));
        assert!(!Isa::AVX512.within(avx2));
        let nosha: Isa = "avx512-nosha".parse().unwrap();
        assert!(Isa::AVX2.within(nosha) && Isa::AVX512.within(nosha));
        assert!(!Isa::SHA_NI.within(nosha));
        for needs in [Isa::AVX2, Isa::AVX512, Isa::SHA_NI] {
            assert!(needs.within(Isa::ALL));
            assert!(!needs.within(Isa::PORTABLE));
        }
    }
}
