int part1() { return 1; }
