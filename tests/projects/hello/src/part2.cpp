int part2() { return 2; }
