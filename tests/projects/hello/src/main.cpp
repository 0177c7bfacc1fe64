int part1(); int part2(); int part3(); int part4(); int part5();
int main() { return part1() + part2() + part3() + part4() + part5() - 15; }
