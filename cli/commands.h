/* Subcommands of the pocketflash CLI; argv[0] is the subcommand name. Each returns the exit status. */
#ifndef PF_CLI_COMMANDS_H
#define PF_CLI_COMMANDS_H

int cmd_demo(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_bench_model(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_taps(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_dec_attach(int argc, char **argv);
int cmd_draft_head(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_vocab_import(int argc, char **argv);
int cmd_synth_draft(int argc, char **argv);
int cmd_expand(int argc, char **argv);
int cmd_pack(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_schema_bench(int argc, char **argv);

#endif
