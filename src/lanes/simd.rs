//! What every SIMD kernel shares, below the table of kernels (`kernel.rs`) that lists them:
//! the check of the lanes' data that makes a kernel's reads sound, the public entry of a
//! kernel for the benchmarks, whether this CPU runs 512-bit instructions at half width, and
//! the trees of shifts of the AVX2 SHA-2 kernels. A kernel imports these, and never the
//! table, so that the table can import every kernel without a cycle.

use std::sync::OnceLock;

/// Whether this CPU has AVX-512 and runs its 512-bit instructions as two halves on 256-bit
/// units ([`zen4`]). Looked up once: the MD5 kernel asks on every call.
pub(super) fn half_width_512() -> bool {
    static HALF: OnceLock<bool> = OnceLock::new();
    *HALF.get_or_init(half_width_512_uncached)
}

fn half_width_512_uncached() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        #[allow(unused_unsafe, reason = "newer toolchains declare `__cpuid` safe")]
        // SAFETY: every x86-64 CPU has CPUID, and leaves 0 and 1 always exist.
        let (vendor, signature) = unsafe { (__cpuid(0), __cpuid(1).eax) };
        let vendor = [vendor.ebx, vendor.edx, vendor.ecx];
        zen4(vendor, signature) && std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether CPUID's vendor (leaf 0: EBX, EDX, ECX) and signature (leaf 1: EAX) are AMD's
/// family 0x19: Zen 3, which has no AVX-512, or Zen 4, which runs it on 256-bit units. Zen 5
/// (family 0x1A) and Intel's cores with AVX-512 have 512-bit units.
fn zen4(vendor: [u32; 3], signature: u32) -> bool {
    let amd = vendor == [0x6874_7541, 0x6974_6e65, 0x444d_4163]; // "AuthenticAMD"
    let base = (signature >> 8) & 0xF;
    let family = if base == 0xF {
        base + ((signature >> 20) & 0xFF)
    } else {
        base
    };
    amd && family == 0x19
}

/// The start of every lane's data, once checked that each lane has `blocks` blocks of `block`
/// bytes: the check that makes a kernel's reads through the pointers sound, which every kernel
/// makes before it reads.
///
/// # Panics
/// If a lane has less data.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) fn checked_pointers<const N: usize>(
    data: &[&[u8]; N],
    blocks: usize,
    block: usize,
) -> [*const u8; N] {
    check_lengths(data, blocks, block);
    std::array::from_fn(|i| data[i].as_ptr())
}

/// Panics unless every lane of `data` has `blocks` blocks of `block` bytes. Not generic over
/// the number of lanes, so that one copy serves every kernel.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn check_lengths(data: &[&[u8]], blocks: usize, block: usize) {
    let len = blocks.checked_mul(block).expect("block count overflows");
    assert!(
        data.iter().all(|d| d.len() >= len),
        "every message needs {blocks} blocks"
    );
}

/// The public entry `$name` to the kernel `compress` of the module it is written in, for the
/// benchmarks outside the crate, which cannot call it; it checks the CPU with the module's
/// `supported` first.
#[cfg(target_arch = "x86_64")]
macro_rules! bench_entry {
    ($name:ident, $state:ty) => {
        /// Benchmark access to [`compress`], which is private to the crate.
        ///
        /// # Panics
        /// If the CPU lacks the kernel's instructions ([`supported`]), or as [`compress`] does.
        #[doc(hidden)]
        pub fn $name<const N: usize>(states: &mut [$state; N], data: &[&[u8]; N], blocks: usize) {
            assert!(
                supported(),
                "the CPU lacks the instructions of {}",
                stringify!($name)
            );
            // SAFETY: the CPU runs the kernel, checked just above.
            unsafe { compress(states, data, blocks) }
        }
    };
}
#[cfg(target_arch = "x86_64")]
pub(super) use bench_entry;

#[cfg(target_arch = "x86_64")]
/// The right shifts and left shifts of `x` by the literal pairs given, all xored: a rotation
/// right by `s` is `x >> s ^ x << (64 - s)` (the two halves never overlap, so xor is or), and
/// xoring every shift at once rather than rotation by rotation lets the compiler build a
/// balanced tree. Shifts 64-bit lanes; `xor_shifts!(u32: x; …)` shifts 32-bit lanes (the
/// SHA-256 kernel of eight lanes).
macro_rules! xor_shifts {
    (u32: $x:expr; $($dir:ident $s:literal),+) => {
        xor_shifts!(@tree $(xor_shifts!(@one32 $x, $dir $s)),+)
    };
    ($x:expr; $($dir:ident $s:literal),+) => {
        xor_shifts!(@tree $(xor_shifts!(@one $x, $dir $s)),+)
    };
    (@one $x:expr, r $s:literal) => { _mm256_srli_epi64::<$s>($x) };
    (@one $x:expr, l $s:literal) => { _mm256_slli_epi64::<$s>($x) };
    (@one32 $x:expr, r $s:literal) => { _mm256_srli_epi32::<$s>($x) };
    (@one32 $x:expr, l $s:literal) => { _mm256_slli_epi32::<$s>($x) };
    (@tree $a:expr) => { $a };
    (@tree $a:expr, $b:expr) => { _mm256_xor_si256($a, $b) };
    (@tree $a:expr, $b:expr, $c:expr) => { _mm256_xor_si256(_mm256_xor_si256($a, $b), $c) };
    (@tree $a:expr, $b:expr, $c:expr, $d:expr) => {
        _mm256_xor_si256(_mm256_xor_si256($a, $b), _mm256_xor_si256($c, $d))
    };
    (@tree $a:expr, $b:expr, $c:expr, $d:expr, $e:expr) => {
        _mm256_xor_si256(xor_shifts!(@tree $a, $b, $c, $d), $e)
    };
    (@tree $a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr) => {
        _mm256_xor_si256(xor_shifts!(@tree $a, $b, $c, $d), _mm256_xor_si256($e, $f))
    };
}
#[cfg(target_arch = "x86_64")]
pub(super) use xor_shifts;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zen4_is_amd_family_0x19_only() {
        let amd = [0x6874_7541, 0x6974_6e65, 0x444d_4163];
        let intel = [0x756e_6547, 0x4965_6e69, 0x6c65_746e]; // "GenuineIntel"
        assert!(zen4(amd, 0x00A1_0F11), "EPYC 9004 (Genoa)");
        assert!(!zen4(amd, 0x00B0_0F21), "EPYC 9005 (Turin, Zen 5)");
        assert!(!zen4(amd, 0x0083_0F10), "EPYC 7002 (Rome, Zen 2)");
        assert!(!zen4(intel, 0x0008_06F8), "Xeon 4th gen (Sapphire Rapids)");
        assert!(
            !zen4(intel, 0x00A1_0F11),
            "another vendor with the same signature"
        );
    }
}
