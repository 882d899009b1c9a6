use harness::prng::SplitMix64;

#[test]
fn splitmix64_matches_the_reference_sequence() {
    // The first outputs of Vigna's splitmix64.c seeded with 0.
    let mut rng = SplitMix64::new(0);
    assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
    assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    assert_eq!(rng.next_u64(), 0x06C4_5D18_8009_454F);
}

#[test]
fn same_seed_same_values_and_streams_are_independent() {
    let draw = |seed, stream| {
        let mut r = SplitMix64::for_stream(seed, stream);
        (0..8).map(|_| r.next_u64()).collect::<Vec<_>>()
    };
    assert_eq!(draw(1, "q"), draw(1, "q"));
    assert_ne!(draw(1, "q"), draw(1, "k"));
    assert_ne!(draw(1, "q"), draw(2, "q"));
}

#[test]
fn bounded_draws_stay_in_range_and_cover_it() {
    let mut rng = SplitMix64::new(3);
    let mut seen = [false; 7];
    for _ in 0..1000 {
        let x = rng.below(7) as usize;
        seen[x] = true;
        let y = rng.range_inclusive(10, 12);
        assert!((10..=12).contains(&y));
        let f = rng.next_f64();
        assert!((0.0..1.0).contains(&f));
    }
    assert!(seen.iter().all(|&s| s));
    assert_eq!(rng.below(0), 0);
    assert_eq!(rng.range_inclusive(5, 5), 5);
}

#[test]
fn normal_draws_have_unit_variance() {
    let mut rng = SplitMix64::new(11);
    let n = 200_000;
    let xs: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
    assert!(mean.abs() < 0.01, "mean {mean}");
    assert!((var - 1.0).abs() < 0.02, "variance {var}");
    assert!(xs.iter().all(|x| x.is_finite()));
}
