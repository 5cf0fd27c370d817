# owned by one piece of work; see docs/chip.md
