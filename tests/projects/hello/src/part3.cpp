int part3() { return 3; }
