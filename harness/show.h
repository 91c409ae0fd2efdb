/*
** harness/show.h - `lenx show` (harness/show.c).
*/
#ifndef LX_SHOW_H
#define LX_SHOW_H

/* The command: argv after "show"; returns the exit status. */
int lx_cmd_show(int argc, char **argv);

#endif
