use harness::float::Dtype;
use harness::prng::SplitMix64;
use harness::problem::{Inputs, Problem, Shape, ShapeError};
use harness::shapes::random_shapes;

#[test]
fn shapes_parse_and_reject_what_the_abi_cannot_address() {
    assert_eq!(Shape::parse("2,8,512,64"), Ok(Shape::new(2, 8, 512, 64)));
    assert_eq!(Shape::parse(" 1, 1, 1, 128 "), Ok(Shape::new(1, 1, 1, 128)));
    assert!(matches!(
        Shape::parse("2,8,512"),
        Err(ShapeError::Syntax(_))
    ));
    assert!(matches!(
        Shape::parse("2,8,x,64"),
        Err(ShapeError::Syntax(_))
    ));
    assert!(matches!(
        Shape::parse("2,8,-1,64"),
        Err(ShapeError::Syntax(_))
    ));
    assert_eq!(
        Shape::parse("2,0,512,64"),
        Err(ShapeError::Zero { dim: "H" })
    );
    assert_eq!(Shape::parse("256,256,1,64"), Err(ShapeError::GridY(65536)));
    assert!(matches!(
        Shape::parse("64,64,65536,128"),
        Err(ShapeError::Elements(_))
    ));
    assert_eq!(Shape::new(2, 8, 512, 64).to_string(), "2,8,512,64");
}

#[test]
fn work_is_counted_as_the_brief_defines_it() {
    let p = Problem::new(Shape::new(2, 8, 512, 64), Dtype::F16, false);
    assert_eq!(p.flops(), 4.0 * 2.0 * 8.0 * 512.0 * 512.0 * 64.0);
    assert_eq!(p.min_bytes(), 4.0 * 2.0 * 8.0 * 512.0 * 64.0 * 2.0);
    let c = Problem::new(p.shape, Dtype::Bf16, true);
    assert_eq!(c.flops(), p.flops() / 2.0);
    assert_eq!(p.softmax_scale, 0.125);
    assert_eq!(c.label(), "2,8,512,64 bf16 causal");
}

#[test]
fn inputs_are_seeded_nonzero_and_different_per_tensor() {
    let shape = Shape::new(1, 2, 300, 64);
    let a = Inputs::generate(shape, Dtype::Bf16, 1);
    assert_eq!(a, Inputs::generate(shape, Dtype::Bf16, 1));
    assert_ne!(a, Inputs::generate(shape, Dtype::Bf16, 2));
    assert_ne!(a.q, a.k);
    assert_ne!(a.k, a.v);
    for t in [&a.q, &a.k, &a.v] {
        assert_eq!(t.len(), shape.elements());
        assert!(t.iter().all(|&b| b & 0x7FFF != 0 && !Dtype::Bf16.is_nan(b)));
    }
}

#[test]
fn inputs_filled_in_parallel_are_standard_normal_and_position_determined() {
    // Larger than one thread's chunk, so several threads fill each tensor.
    let shape = Shape::new(2, 4, 1024, 64);
    let a = Inputs::generate(shape, Dtype::F16, 7);
    let values: Vec<f64> = a.q.iter().map(|&b| Dtype::F16.decode(b)).collect();
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    assert!(mean.abs() < 0.01, "mean {mean}");
    assert!((var - 1.0).abs() < 0.02, "variance {var}");
    // A tensor is a prefix-stable function of the position: a smaller shape with the same seed
    // holds the same leading values.
    let small = Inputs::generate(Shape::new(1, 1, 1024, 64), Dtype::F16, 7);
    assert_eq!(small.q[..], a.q[..small.q.len()]);
    // The draws at a position are the stream's own.
    let mut rng = SplitMix64::for_stream(7, "q");
    let fixed = SplitMix64::for_stream(7, "q");
    for k in 0..5 {
        assert_eq!(fixed.u64_at(k), rng.next_u64());
    }
}

#[test]
fn random_shapes_lead_with_tile_edge_cases_and_are_reproducible() {
    let shapes = random_shapes(12, 7, 64, 64, 32);
    assert_eq!(shapes, random_shapes(12, 7, 64, 64, 32));
    assert_eq!(shapes.len(), 12);
    let lens: Vec<usize> = shapes.iter().map(|s| s.seq_len).collect();
    assert_eq!(&lens[..6], &[1, 17, 33, 131, 192, 31]);
    assert!(lens.iter().any(|&s| s < 32));
    assert!(lens.iter().any(|&s| s % 64 != 0 && s % 32 != 0 && s > 64));
    for s in &shapes {
        assert_eq!(s.head_dim, 64);
        assert!(s.validate().is_ok());
        assert!((1..=3).contains(&s.batch) && (1..=4).contains(&s.heads));
        assert!(s.seq_len <= 6 * 64);
    }
    assert_eq!(random_shapes(3, 7, 128, 128, 64).len(), 3);
}
