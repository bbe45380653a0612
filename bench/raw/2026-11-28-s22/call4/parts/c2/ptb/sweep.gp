$points << EOD
6739820 1725314.8049775714 150.41375225003912 "R64 c1" 0 1 1
6740012 1730634.231850801 150.69139710449286 "R64 c2" 0 0 1
6740396 1742910.908138566 151.24291403137283 "R64 c4" 0 0 1
6887468 1401708.9683336038 151.24747858674871 "R128 c1" 0 0 0
6887852 1392735.7781652031 151.41221950734717 "R128 c2" 0 0 0
6888620 1396749.979801072 151.58440450451675 "R128 c4" 0 0 0
EOD
$paper << EOD
12000000 57.899999999999999 "paper core-1"
12000000 49.799999999999997 "paper core-2"
EOD
$front_params << EOD
6739820 150.41375225003912
EOD
$front_tps << EOD
1742910.908138566 151.24291403137283
1730634.231850801 150.69139710449286
1725314.8049775714 150.41375225003912
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22d/c2/ptb/sweep.png'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.35747e+06:1.27217e+07]
set yrange [43.6148:173.081]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.35M" 1350000, "1.4M" 1400000, "1.45M" 1450000, "1.5M" 1500000, "1.55M" 1550000, "1.6M" 1600000, "1.65M" 1650000, "1.7M" 1700000, "1.75M" 1750000, "1.8M" 1800000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.33709e+06:1.81544e+06]
set yrange [43.6148:173.081]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22d/c2/ptb/sweep.svg'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.35747e+06:1.27217e+07]
set yrange [43.6148:173.081]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.35M" 1350000, "1.4M" 1400000, "1.45M" 1450000, "1.5M" 1500000, "1.55M" 1550000, "1.6M" 1600000, "1.65M" 1650000, "1.7M" 1700000, "1.75M" 1750000, "1.8M" 1800000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.33709e+06:1.81544e+06]
set yrange [43.6148:173.081]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
