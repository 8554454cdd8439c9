// train_main.c: shakespeare-train (being written).
int main(void) { return 0; }
