fn main() {
    println!("harness: not yet implemented");
}
