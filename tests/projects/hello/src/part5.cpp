int part5() { return 5; }
