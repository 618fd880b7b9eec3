//! Prints the published schemas (for eyeballing; the tests snapshot them).
fn main() {
    let names = [
        protocol::SurfaceName::new("s1").expect("valid"),
        protocol::SurfaceName::new("right").expect("valid"),
    ];
    for v in [
        protocol::action_schema().clone(),
        protocol::action_tool_schema(),
        protocol::computer_use_tool(&names),
        protocol::extended_action_schema().clone(),
        protocol::extended_action_tool_schema(),
    ] {
        println!("{}", serde_json::to_string_pretty(&v).expect("serializes"));
    }
}
