//! robots.txt, read with the crawler's own agent name.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(robot) = texting_robots::Robot::new("LoreBot", data) {
        let _ = robot.allowed("https://docs.example.test/some/page?x=1");
    }
});
