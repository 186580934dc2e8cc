/* placeholder until the service lands */
int main(void) { return 0; }
