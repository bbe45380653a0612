$points << EOD
6789292 1377290.474788164 76.707703456988924 "TXL M" 2 1 1
6789292 1476218.0273287706 90.377248739115018 "TXL M0" 3 1 1
EOD
$paper << EOD
12000000 57.899999999999999 "paper core-1"
12000000 49.799999999999997 "paper core-2"
EOD
$front_params << EOD
6789292 76.707703456988924
EOD
$front_tps << EOD
1476218.0273287706 90.377248739115018
1377290.474788164 76.707703456988924
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22d/txl/ptb/sweep.png'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("50" 50, "60" 60, "70" 70, "80" 80, "90" 90, "100" 100)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.40648e+06:1.2717e+07]
set yrange [44.7573:100.56]
plot $points using 1:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 1:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.34M" 1340000, "1.36M" 1360000, "1.38M" 1380000, "1.4M" 1400000, "1.42M" 1420000, "1.44M" 1440000, "1.46M" 1460000, "1.48M" 1480000, "1.5M" 1500000, "1.52M" 1520000)
set ytics ("50" 50, "60" 60, "70" 70, "80" 80, "90" 90, "100" 100)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.33255e+06:1.52579e+06]
set yrange [44.7573:100.56]
plot $points using 2:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 2:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22d/txl/ptb/sweep.svg'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("50" 50, "60" 60, "70" 70, "80" 80, "90" 90, "100" 100)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.40648e+06:1.2717e+07]
set yrange [44.7573:100.56]
plot $points using 1:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 1:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.34M" 1340000, "1.36M" 1360000, "1.38M" 1380000, "1.4M" 1400000, "1.42M" 1420000, "1.44M" 1440000, "1.46M" 1460000, "1.48M" 1480000, "1.5M" 1500000, "1.52M" 1520000)
set ytics ("50" 50, "60" 60, "70" 70, "80" 80, "90" 90, "100" 100)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.33255e+06:1.52579e+06]
set yrange [44.7573:100.56]
plot $points using 2:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 2:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
