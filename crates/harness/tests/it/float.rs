use harness::float::{Dtype, POISON_BITS};

#[test]
fn every_finite_pattern_round_trips_through_f64() {
    for dtype in [Dtype::F16, Dtype::Bf16] {
        for bits in 0..=u16::MAX {
            let x = dtype.decode(bits);
            if x.is_nan() {
                assert!(dtype.is_nan(bits), "{dtype} {bits:#06x}");
                continue;
            }
            assert!(!dtype.is_nan(bits), "{dtype} {bits:#06x}");
            assert_eq!(dtype.encode(x), bits, "{dtype} {bits:#06x} = {x}");
        }
    }
}

#[test]
fn known_values_encode_to_their_textbook_bits() {
    let cases = [
        (Dtype::F16, 1.0, 0x3C00),
        (Dtype::F16, -2.0, 0xC000),
        (Dtype::F16, 65504.0, 0x7BFF),
        (Dtype::F16, 2f64.powi(-14), 0x0400),
        (Dtype::F16, 2f64.powi(-24), 0x0001),
        (Dtype::F16, std::f64::consts::PI, 0x4248),
        (Dtype::F16, 0.1, 0x2E66),
        (Dtype::F16, f64::INFINITY, 0x7C00),
        (Dtype::Bf16, 1.0, 0x3F80),
        (Dtype::Bf16, -2.0, 0xC000),
        (Dtype::Bf16, std::f64::consts::PI, 0x4049),
        (Dtype::Bf16, 0.1, 0x3DCD),
        (Dtype::Bf16, f64::NEG_INFINITY, 0xFF80),
    ];
    for (dtype, x, bits) in cases {
        assert_eq!(dtype.encode(x), bits, "{dtype} {x}");
    }
}

#[test]
fn halfway_values_round_to_even() {
    // 1 + 2^-11 lies halfway between 1.0 (even) and 1 + 2^-10 (odd).
    assert_eq!(Dtype::F16.encode(1.0 + 2f64.powi(-11)), 0x3C00);
    // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
    assert_eq!(Dtype::F16.encode(1.0 + 3.0 * 2f64.powi(-11)), 0x3C02);
    // Just above halfway rounds up.
    assert_eq!(
        Dtype::F16.encode(1.0 + 2f64.powi(-11) + 2f64.powi(-30)),
        0x3C01
    );
    assert_eq!(Dtype::Bf16.encode(1.0 + 2f64.powi(-8)), 0x3F80);
    assert_eq!(Dtype::Bf16.encode(1.0 + 3.0 * 2f64.powi(-8)), 0x3F82);
}

#[test]
fn overflow_goes_to_infinity_and_underflow_to_zero() {
    // 65520 is halfway between 65504 (odd mantissa) and 65536 (infinity): ties to even = inf.
    assert_eq!(Dtype::F16.encode(65519.0), 0x7BFF);
    assert_eq!(Dtype::F16.encode(65520.0), 0x7C00);
    assert_eq!(Dtype::F16.encode(1e300), 0x7C00);
    assert_eq!(Dtype::Bf16.encode(1e300), 0x7F80);
    // Half the smallest subnormal ties to zero; just above rounds up.
    assert_eq!(Dtype::F16.encode(2f64.powi(-25)), 0x0000);
    assert_eq!(Dtype::F16.encode(2f64.powi(-25) * 1.0001), 0x0001);
    assert_eq!(Dtype::F16.encode(-1e-300), 0x8000);
    // The largest subnormal rounds up into the smallest normal.
    assert_eq!(Dtype::F16.encode(2f64.powi(-14) - 2f64.powi(-26)), 0x0400);
}

#[test]
fn poison_is_nan_but_not_the_canonical_nan() {
    for dtype in [Dtype::F16, Dtype::Bf16] {
        assert!(dtype.is_nan(POISON_BITS));
        assert!(dtype.decode(POISON_BITS).is_nan());
        assert_ne!(dtype.encode(f64::NAN), POISON_BITS);
        assert!(dtype.is_nan(dtype.encode(f64::NAN)));
        assert!(dtype.is_infinite(dtype.encode(f64::INFINITY)));
        assert!(!dtype.is_infinite(dtype.encode(1.0)));
    }
}

#[test]
fn unit_roundoff_bounds_the_rounding_error() {
    assert_eq!(Dtype::F16.unit_roundoff(), 2f64.powi(-11));
    assert_eq!(Dtype::Bf16.unit_roundoff(), 2f64.powi(-8));
    let mut rng = harness::prng::SplitMix64::new(7);
    for dtype in [Dtype::F16, Dtype::Bf16] {
        for _ in 0..10_000 {
            let x = rng.normal() * 10.0;
            let r = dtype.decode(dtype.encode(x));
            assert!(
                (r - x).abs() <= dtype.unit_roundoff() * x.abs(),
                "{dtype} {x} -> {r}"
            );
        }
    }
}
