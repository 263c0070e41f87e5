fn main() {
    kernel_build::build();
}
