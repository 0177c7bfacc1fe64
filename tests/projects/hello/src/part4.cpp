int part4() { return 4; }
