// sample_main.c: shakespeare-sample (being written).
int main(void) { return 0; }
