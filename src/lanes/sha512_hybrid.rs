//! SHA-512 in AVX2 with scalar streams alongside: `G` groups of four messages in 256-bit
//! registers and `S` messages in general-purpose registers, hashed round by round in one loop.
//!
//! PROTOTYPE (issue 15): the AVX2 kernel is bound by the vector ALUs while the integer ALUs
//! sit idle; a scalar stream costs them ~2 800 instructions per block of its own.

use std::arch::x86_64::*;

use super::kernel::checked_pointers;
use super::sha512_avx2::{
    BLOCK, K, WIDTH, clmul_big_sigma0, clmul_big_sigma1, load_block, load_states, small_sigma0,
    small_sigma1, store_states,
};

/// Whether this CPU runs [`compress`]: AVX2, VPCLMULQDQ and BMI2 (`rorx`).
pub(super) fn supported() -> bool {
    super::sha512_avx2::supported_clmul()
        && is_x86_feature_detected!("bmi1")
        && is_x86_feature_detected!("bmi2")
}

/// Runs `blocks` blocks of `data[i]` through `states[i]` for `N = 4 * G + S` messages.
///
/// # Safety
/// The CPU must run it ([`supported`]).
pub(super) unsafe fn compress<const N: usize>(
    states: &mut [[u64; 8]; N],
    data: &[&[u8]; N],
    blocks: usize,
) {
    let ptrs = checked_pointers(data, blocks, BLOCK);
    // SAFETY: the caller guarantees the CPU; `checked_pointers` checked the lengths.
    unsafe {
        match N {
            1 => compress_mixed::<0, 1>(states, &ptrs, blocks),
            2 => compress_mixed::<0, 2>(states, &ptrs, blocks),
            5 => compress_mixed::<1, 1>(states, &ptrs, blocks),
            6 => compress_mixed::<1, 2>(states, &ptrs, blocks),
            7 => compress_mixed::<1, 3>(states, &ptrs, blocks),
            9 => compress_mixed::<2, 1>(states, &ptrs, blocks),
            10 => compress_mixed::<2, 2>(states, &ptrs, blocks),
            11 => compress_mixed::<2, 3>(states, &ptrs, blocks),
            _ => unimplemented!(),
        }
    }
}

super::kernel::bench_entry!(bench_compress_sha512_hybrid, [u64; 8]);

#[inline(always)]
fn big0(x: u64) -> u64 {
    x.rotate_right(28) ^ x.rotate_right(34) ^ x.rotate_right(39)
}
#[inline(always)]
fn big1(x: u64) -> u64 {
    x.rotate_right(14) ^ x.rotate_right(18) ^ x.rotate_right(41)
}
#[inline(always)]
fn small0(x: u64) -> u64 {
    x.rotate_right(1) ^ x.rotate_right(8) ^ (x >> 7)
}
#[inline(always)]
fn small1(x: u64) -> u64 {
    x.rotate_right(19) ^ x.rotate_right(61) ^ (x >> 6)
}

/// The state of every message by word: vector groups, then scalar streams.
#[derive(Clone, Copy)]
struct Word<const G: usize, const S: usize>([__m256i; G], [u64; S]);

#[target_feature(enable = "avx2,vpclmulqdq,bmi1,bmi2")]
unsafe fn compress_mixed<const G: usize, const S: usize>(
    states: &mut [[u64; 8]],
    ptrs: &[*const u8],
    blocks: usize,
) {
    assert!(ptrs.len() == WIDTH * G + S && states.len() == ptrs.len());
    let (vstates, sstates) = states.split_at_mut(WIDTH * G);
    let v = load_states::<G>(vstates);
    let mut st: [Word<G, S>; 8] =
        std::array::from_fn(|i| Word(v[i], std::array::from_fn(|n| sstates[n][i])));
    let mut w = [[_mm256_setzero_si256(); 80]; G];
    let mut ws = [[0u64; 80]; S];

    for block in 0..blocks {
        for (g, w) in w.iter_mut().enumerate() {
            let lanes = &ptrs[WIDTH * g..WIDTH * (g + 1)];
            // SAFETY: `block < blocks` and every message has `blocks * 128` bytes.
            let words = unsafe { load_block(lanes, block * BLOCK) };
            w[..16].copy_from_slice(&words);
        }
        for (n, ws) in ws.iter_mut().enumerate() {
            let p = ptrs[WIDTH * G + n];
            for (t, word) in ws[..16].iter_mut().enumerate() {
                // SAFETY: as above; unaligned read of 8 of the block's bytes.
                let raw = unsafe { p.add(block * BLOCK + 8 * t).cast::<u64>().read_unaligned() };
                *word = u64::from_be(raw);
            }
        }

        let mut bc: [__m256i; G] =
            std::array::from_fn(|g| _mm256_xor_si256(st[1].0[g], st[2].0[g]));
        let mut bcs: [u64; S] = std::array::from_fn(|n| st[1].1[n] ^ st[2].1[n]);

        macro_rules! round {
            ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident,
             $t:expr) => {
                let k = _mm256_set1_epi64x(K[$t] as i64);
                for n in 0..G {
                    let ch = _mm256_xor_si256(
                        _mm256_and_si256(_mm256_xor_si256($f.0[n], $g.0[n]), $e.0[n]),
                        $g.0[n],
                    );
                    let t1 = _mm256_add_epi64($h.0[n], _mm256_add_epi64(w[n][$t], k));
                    let t1 = _mm256_add_epi64(_mm256_add_epi64(t1, ch), clmul_big_sigma1($e.0[n]));
                    let ab = _mm256_xor_si256($a.0[n], $b.0[n]);
                    let maj = _mm256_xor_si256($b.0[n], _mm256_and_si256(ab, bc[n]));
                    bc[n] = ab;
                    let t2 = _mm256_add_epi64(clmul_big_sigma0($a.0[n]), maj);
                    $d.0[n] = _mm256_add_epi64($d.0[n], t1);
                    $h.0[n] = _mm256_add_epi64(t1, t2);
                }
                for n in 0..S {
                    let e = $e.1[n];
                    let ch = (e & $f.1[n]).wrapping_add(!e & $g.1[n]);
                    let t1 = $h.1[n]
                        .wrapping_add(K[$t])
                        .wrapping_add(ws[n][$t])
                        .wrapping_add(ch)
                        .wrapping_add(big1(e));
                    let ab = $a.1[n] ^ $b.1[n];
                    let maj = $b.1[n] ^ (ab & bcs[n]);
                    bcs[n] = ab;
                    let t2 = big0($a.1[n]).wrapping_add(maj);
                    $d.1[n] = $d.1[n].wrapping_add(t1);
                    $h.1[n] = t1.wrapping_add(t2);
                }
            };
        }
        macro_rules! schedule {
            ($t:expr) => {
                let t = $t + 16;
                for words in w.iter_mut() {
                    words[t] = _mm256_add_epi64(
                        _mm256_add_epi64(small_sigma1(words[t - 2]), words[t - 7]),
                        _mm256_add_epi64(small_sigma0(words[t - 15]), words[t - 16]),
                    );
                }
                for words in ws.iter_mut() {
                    words[t] = small1(words[t - 2])
                        .wrapping_add(words[t - 7])
                        .wrapping_add(small0(words[t - 15]))
                        .wrapping_add(words[t - 16]);
                }
            };
        }

        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = st;
        for t in (0..64).step_by(8) {
            round!(a, b, c, d, e, f, g, h, t);
            schedule!(t);
            round!(h, a, b, c, d, e, f, g, t + 1);
            schedule!(t + 1);
            round!(g, h, a, b, c, d, e, f, t + 2);
            schedule!(t + 2);
            round!(f, g, h, a, b, c, d, e, t + 3);
            schedule!(t + 3);
            round!(e, f, g, h, a, b, c, d, t + 4);
            schedule!(t + 4);
            round!(d, e, f, g, h, a, b, c, t + 5);
            schedule!(t + 5);
            round!(c, d, e, f, g, h, a, b, t + 6);
            schedule!(t + 6);
            round!(b, c, d, e, f, g, h, a, t + 7);
            schedule!(t + 7);
        }
        for t in (64..80).step_by(8) {
            round!(a, b, c, d, e, f, g, h, t);
            round!(h, a, b, c, d, e, f, g, t + 1);
            round!(g, h, a, b, c, d, e, f, t + 2);
            round!(f, g, h, a, b, c, d, e, t + 3);
            round!(e, f, g, h, a, b, c, d, t + 4);
            round!(d, e, f, g, h, a, b, c, t + 5);
            round!(c, d, e, f, g, h, a, b, t + 6);
            round!(b, c, d, e, f, g, h, a, t + 7);
        }
        for (s, new) in st.iter_mut().zip([a, b, c, d, e, f, g, h]) {
            for (s, new) in s.0.iter_mut().zip(new.0) {
                *s = _mm256_add_epi64(*s, new);
            }
            for (s, new) in s.1.iter_mut().zip(new.1) {
                *s = s.wrapping_add(new);
            }
        }
    }
    store_states::<G>(std::array::from_fn(|i| st[i].0), vstates);
    for (n, state) in sstates.iter_mut().enumerate() {
        for (i, word) in state.iter_mut().enumerate() {
            *word = st[i].1[n];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<const N: usize>() {
        if !supported() {
            return eprintln!("skipped");
        }
        let mut rng = super::super::kernel_tests::Rng(N as u64);
        for blocks in [0, 1, 2, 3] {
            let data: Vec<Vec<u8>> = (0..N)
                .map(|_| (0..blocks * 128).map(|_| rng.next() as u8).collect())
                .collect();
            let slices: [&[u8]; N] = std::array::from_fn(|i| data[i].as_slice());
            let init: [[u64; 8]; N] = std::array::from_fn(|_| std::array::from_fn(|_| rng.next()));
            let mut got = init;
            unsafe { compress(&mut got, &slices, blocks) };
            for i in 0..N {
                let mut want = init[i];
                let b: Vec<[u8; 128]> = data[i]
                    .chunks_exact(128)
                    .map(|c| c.try_into().unwrap())
                    .collect();
                sha2::block_api::compress512(&mut want, &b);
                assert_eq!(got[i], want, "N={N} lane {i} blocks {blocks}");
            }
        }
    }

    #[test]
    fn hybrid_matches_rustcrypto() {
        check::<1>();
        check::<2>();
        check::<5>();
        check::<6>();
        check::<7>();
        check::<9>();
        check::<10>();
        check::<11>();
    }

    fn cpu_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    /// GB/s of thread CPU time of `f` hashing `n` messages of 64 KiB per call.
    fn rate(n: usize, f: &mut dyn FnMut()) -> f64 {
        let calls = (96 / n).max(4);
        let t = cpu_ns();
        for _ in 0..calls {
            f();
        }
        (calls * n * 65536) as f64 / (cpu_ns() - t) as f64
    }

    fn kern<const N: usize>(
        data: &[Vec<u8>],
        k: unsafe fn(&mut [[u64; 8]; N], &[&[u8]; N], usize),
    ) -> impl FnMut() {
        let slices: [&[u8]; N] = std::array::from_fn(|i| data[i].as_slice());
        let mut st = [[0u64; 8]; N];
        move || unsafe { k(&mut st, std::hint::black_box(&slices), 512) }
    }

    #[test]
    #[ignore]
    fn hybrid_timing() {
        let mut rng = super::super::kernel_tests::Rng(1);
        let data: Vec<Vec<u8>> = (0..11)
            .map(|_| (0..65536).map(|_| rng.next() as u8).collect())
            .collect();
        use super::super::sha512_avx2::compress_clmul;
        let mut entries: Vec<(&str, usize, Box<dyn FnMut()>)> = vec![
            (
                "clmul-4x1",
                4,
                Box::new(kern::<4>(&data, compress_clmul::<4>)),
            ),
            (
                "clmul-4x2",
                8,
                Box::new(kern::<8>(&data, compress_clmul::<8>)),
            ),
            ("scalar-0+1", 1, Box::new(kern::<1>(&data, compress::<1>))),
            ("scalar-0+2", 2, Box::new(kern::<2>(&data, compress::<2>))),
            ("hybrid-4+1", 5, Box::new(kern::<5>(&data, compress::<5>))),
            ("hybrid-4+2", 6, Box::new(kern::<6>(&data, compress::<6>))),
            ("hybrid-4+3", 7, Box::new(kern::<7>(&data, compress::<7>))),
            ("hybrid-8+1", 9, Box::new(kern::<9>(&data, compress::<9>))),
            (
                "hybrid-8+2",
                10,
                Box::new(kern::<10>(&data, compress::<10>)),
            ),
            (
                "hybrid-8+3",
                11,
                Box::new(kern::<11>(&data, compress::<11>)),
            ),
        ];
        let blocks: Vec<[u8; 128]> = data[0]
            .chunks_exact(128)
            .map(|c| c.try_into().unwrap())
            .collect();
        let mut st = [0u64; 8];
        entries.push((
            "rustcrypto-1",
            1,
            Box::new(move || sha2::block_api::compress512(&mut st, std::hint::black_box(&blocks))),
        ));
        let d0 = data[0].clone();
        entries.push((
            "openssl-1",
            1,
            Box::new(move || {
                std::hint::black_box(openssl::sha::sha512(std::hint::black_box(&d0)));
            }),
        ));
        if let Ok(only) = std::env::var("ONLY") {
            entries.retain(|e| e.0 == only);
        }
        let reps = std::env::var("REPS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(5);
        let mut best = vec![0f64; entries.len()];
        let mut all = vec![Vec::new(); entries.len()];
        for _ in 0..reps {
            for (i, (_, n, f)) in entries.iter_mut().enumerate() {
                let r = rate(*n, f.as_mut());
                best[i] = best[i].max(r);
                all[i].push(r);
            }
        }
        let ossl = 0.868;
        for (i, (name, ..)) in entries.iter().enumerate() {
            let mut v = all[i].clone();
            v.sort_by(f64::total_cmp);
            eprintln!(
                "{name:12} best {:.3} GB/s median {:.3}  best x openssl-1 {:.2}",
                best[i],
                v[v.len() / 2],
                best[i] / ossl
            );
        }
    }
}
