fn main() {
    println!("runner: not yet implemented");
}
